#include "check.h"
int main(void)
{
    return report("x");
}
