/* tests/fabric/cases.h: the case functions (one per line of cases.def). A
 * case returns when every check passed; a failed check exits the process. */
#ifndef RF_TESTS_FABRIC_CASES_H
#define RF_TESTS_FABRIC_CASES_H

#define RT_ALL       0
#define RT_SOCK_ONLY 1
#define RT_AUTO_ONLY 2

#define RT_CASE(name, budget, flags, desc) void case_##name(void);
#include "tests/fabric/cases.def"
#undef RT_CASE

#endif
