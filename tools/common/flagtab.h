/* tools/common/flagtab.h: the flag table the command-line programs share
 * (tools/, bench/). A program describes each flag once, in one row: its
 * long name, an optional short alias, its type, where the value goes, its
 * default (as text, parsed like a value), its range and its help text.
 * flagtab_parse reads argv GNU style from those rows, and
 * flagtab_print_help prints the options' help from the same rows, so a
 * default or a bound is written in one place.
 *
 * It is tool support, not part of librdmaflow: a static library (target
 * rf_flagtab) the programs link; it never exits and never prints an error
 * itself: a failure comes back in a flagtab_error, whose message names the
 * flag and what was wrong, and the program prints it in its own words and
 * exits 2. */
#ifndef RF_TOOLS_FLAGTAB_H
#define RF_TOOLS_FLAGTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a row's destination is, and so how its value is read. */
typedef enum flagtab_type {
    FLAGTAB_BOOL,   /* bool; takes no value: --NAME sets it (see NEGATABLE) */
    FLAGTAB_INT,    /* int, decimal, [min, max] */
    FLAGTAB_UINT16, /* uint16_t, decimal, no sign, [min, max] */
    FLAGTAB_UINT32, /* uint32_t, decimal, no sign, [min, max] */
    FLAGTAB_INT64,  /* int64_t, decimal, [min, max] */
    FLAGTAB_UINT64, /* uint64_t, decimal, no sign, [min, max] */
    FLAGTAB_SIZE,   /* uint64_t bytes, optional binary K, M or G suffix */
    FLAGTAB_DOUBLE, /* double, finite, [dmin, dmax] */
    FLAGTAB_STRING, /* const char *, pointing into argv (or at the default) */
    FLAGTAB_BUFFER, /* char[size], a copy of the value, shorter than size */
    FLAGTAB_ENUM,   /* int: the value of the choice named */
    FLAGTAB_CHOICE, /* const char *: the name of the choice given */
    FLAGTAB_CALL,   /* the row's call reads the value (a flag of its own) */
} flagtab_type;

/* Row bits. */
#define FLAGTAB_HIDDEN    0x01u /* not in the help (internal flags, aliases) */
#define FLAGTAB_NEGATABLE 0x02u /* BOOL: --noNAME clears it */
#define FLAGTAB_STOP      0x04u /* BOOL: set it and stop (--help, --version) */
#define FLAGTAB_REAL_INT  0x08u /* integers may be written as reals: 1e5 */
#define FLAGTAB_MIN_OPEN  0x10u /* DOUBLE: the value must exceed dmin */
#define FLAGTAB_NONEMPTY  0x20u /* STRING, BUFFER: "" is refused */
#define FLAGTAB_NO_VALUE  0x40u /* CALL: takes no value (value is NULL) */
#define FLAGTAB_FLOAT32                                                        \
    0x80u /* DOUBLE: stored later as a float32, so                             \
             not 0 must stay a normal float32 */
#define FLAGTAB_OPTIONAL                                                       \
    0x100u /* tf_style, a row with a value: "--NAME"                           \
              alone is "--NAME=true", "--noNAME"                               \
              "--NAME=false" */
/* Bits a program may give its rows for its own use (the table's given
 * call reads them); flagtab ignores them. */
#define FLAGTAB_PROGRAM_BITS 0xff0000u

/* One name of an ENUM or CHOICE row; a list ends with a NULL name. */
typedef struct flagtab_choice {
    const char *name;
    int value;
} flagtab_choice;

typedef struct flagtab_error flagtab_error;
typedef struct flagtab_row flagtab_row;

/* A CALL row's reader: value as given (NULL for a NO_VALUE row), ctx the
 * table's. Returns 0, or -1 after flagtab_fail(err, ...). */
typedef int (*flagtab_call)(const flagtab_row *row, const char *value,
                            void *ctx, flagtab_error *err);

struct flagtab_row {
    const char *name; /* long name, without "--" */
    char alias;       /* short alias ('p' for -p), or 0 */
    flagtab_type type;
    void *dest;
    /* The default as text, read like a value before argv (a CALL row's
     * call gets it too); NULL leaves dest as the program set it. The help
     * shows it unless the row is a BOOL. */
    const char *def;
    int64_t min, max;  /* integer rows: both 0 means the type's range */
    double dmin, dmax; /* DOUBLE rows: both 0 means any finite value */
    size_t size;       /* BUFFER rows: sizeof the array */
    const flagtab_choice *choices; /* ENUM and CHOICE rows */
    flagtab_call call;             /* CALL rows */
    bool *seen;          /* if not NULL: set when argv gives the flag */
    unsigned bits;       /* FLAGTAB_* row bits */
    const char *metavar; /* the value's name in the help ("PORT") */
    const char *help;    /* the help column (wrapped by the printer) */
};

/* Row macros: a row in a line or two, the fields every row of a type has
 * in a fixed order, then the help text, then (optionally) any other
 * designated field: ".alias = 'p'", ".seen = &given", ".bits = ...".
 *   FLAG_INT("rounds", &o->rounds, "9", 1, 1000, "N", "measured rounds"),
 * A NULL default leaves dest as the program set it; min = max = 0 is the
 * type's whole range (DOUBLE: any finite value). */
#define FLAGTAB_NUMBER_(kind, nm, dst, dflt, lo, hi, mv, ...)                  \
    {                                                                          \
        .name = (nm), .type = (kind), .dest = (dst), .def = (dflt),            \
        .min = (lo), .max = (hi), .metavar = (mv), .help = __VA_ARGS__         \
    }
#define FLAG_INT(...)    FLAGTAB_NUMBER_(FLAGTAB_INT, __VA_ARGS__)
#define FLAG_UINT16(...) FLAGTAB_NUMBER_(FLAGTAB_UINT16, __VA_ARGS__)
#define FLAG_UINT32(...) FLAGTAB_NUMBER_(FLAGTAB_UINT32, __VA_ARGS__)
#define FLAG_INT64(...)  FLAGTAB_NUMBER_(FLAGTAB_INT64, __VA_ARGS__)
#define FLAG_UINT64(...) FLAGTAB_NUMBER_(FLAGTAB_UINT64, __VA_ARGS__)
#define FLAG_SIZE(...)   FLAGTAB_NUMBER_(FLAGTAB_SIZE, __VA_ARGS__)
#define FLAG_DOUBLE(nm, dst, dflt, lo, hi, mv, ...)                            \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_DOUBLE, .dest = (dst), .def = (dflt),    \
        .dmin = (lo), .dmax = (hi), .metavar = (mv), .help = __VA_ARGS__       \
    }
/* a BOOL; FLAG_STOP: one that stops the parse (--help, --version) */
#define FLAG_BOOL(nm, dst, ...)                                                \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_BOOL, .dest = (dst), .help = __VA_ARGS__ \
    }
#define FLAG_STOP(nm, dst, ...)                                                \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_BOOL, .dest = (dst),                     \
        .bits = FLAGTAB_STOP, .help = __VA_ARGS__                              \
    }
#define FLAG_STRING(nm, dst, dflt, mv, ...)                                    \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_STRING, .dest = (dst), .def = (dflt),    \
        .metavar = (mv), .help = __VA_ARGS__                                   \
    }
/* dst is the array itself (its sizeof is the row's size) */
#define FLAG_BUFFER(nm, dst, dflt, mv, ...)                                    \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_BUFFER, .dest = (dst),                   \
        .size = sizeof(dst), .def = (dflt), .metavar = (mv),                   \
        .help = __VA_ARGS__                                                    \
    }
#define FLAG_ENUM(nm, dst, dflt, list, mv, ...)                                \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_ENUM, .dest = (dst), .def = (dflt),      \
        .choices = (list), .metavar = (mv), .help = __VA_ARGS__                \
    }
#define FLAG_CHOICE(nm, dst, dflt, list, mv, ...)                              \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_CHOICE, .dest = (dst), .def = (dflt),    \
        .choices = (list), .metavar = (mv), .help = __VA_ARGS__                \
    }
#define FLAG_CALL(nm, fn, dflt, mv, ...)                                       \
    {                                                                          \
        .name = (nm), .type = FLAGTAB_CALL, .call = (fn), .def = (dflt),       \
        .metavar = (mv), .help = __VA_ARGS__                                   \
    }

/* A table: rows up to the first row without a name. */
typedef struct flagtab {
    const flagtab_row *rows;
    void *ctx; /* given to CALL rows */
    /* Long names only as written (no unique-prefix abbreviation, which
     * getopt_long allows and so the table does by default). */
    bool exact_names;
    /* "-x" is an operand, not a short flag: only "--" starts a flag. */
    bool long_only;
    /* A value in the next argument may not start with "--": "--host
     * --trace x" is a missing value (rf-launch), not the host "--trace". */
    bool no_dashed_values;
    /* TensorFlow (absl) flags, as rf-trainer takes them: only "--NAME=V",
     * "--NAME V" (V not starting with "--") and "--NAME" for a BOOL or an
     * OPTIONAL row; "--noNAME" for a NEGATABLE one; a BOOL also takes
     * "=true", "=false", "=1" or "=0"; names exact; any other argument,
     * "-x", "--" and "--=V" too, is an OPERAND error; integers are read
     * signed; and the messages are in absl's words ("--batch_size: 'abc'
     * is not an integer", "--x: unknown flag (see --help)"). */
    bool tf_style;
    /* If not NULL: called with each row argv gives, its value stored. */
    void (*given)(const flagtab_row *row, void *ctx);
} flagtab;

typedef enum flagtab_error_kind {
    FLAGTAB_ERR_NONE = 0,
    FLAGTAB_ERR_UNKNOWN,       /* no row has the name */
    FLAGTAB_ERR_AMBIGUOUS,     /* a prefix of several long names */
    FLAGTAB_ERR_MISSING_VALUE, /* the last argument, and it needs a value */
    FLAGTAB_ERR_EXTRA_VALUE,   /* --NAME=V for a flag that takes none */
    FLAGTAB_ERR_BAD_VALUE,     /* the value is malformed or out of range */
    FLAGTAB_ERR_DEFAULT,       /* a row's own default is bad (a bug) */
    FLAGTAB_ERR_OPERAND,       /* tf_style: an argument that is no flag */
} flagtab_error_kind;

struct flagtab_error {
    flagtab_error_kind kind;
    const flagtab_row *row; /* NULL for UNKNOWN and AMBIGUOUS */
    const char *arg;        /* the argument as typed ("--rtol=abc", "-p") */
    const char *value;      /* the value, or NULL */
    /* What went wrong, naming the flag: "unknown option '--x'", "option
     * '-p' needs a value", "-p/--port: 65536 is outside [0, 65535]". */
    char message[384];
};

/* flagtab_parse's answers (besides -1 for an error). */
#define FLAGTAB_OK      0
#define FLAGTAB_STOPPED 1 /* a STOP row was given; later arguments unread */

/* Applies every row's default, then reads argv[1 .. argc) in order:
 * "--NAME=V", "--NAME V", "--NAME" (BOOL), "--noNAME" (NEGATABLE),
 * "-a", "-aV", "-a V" and clusters of BOOL aliases ("-aN"); "--" ends the
 * flags; a value takes the next argument even when it starts with '-'
 * (unless no_dashed_values and it starts with "--"). Operands (any other
 * argument, "-" too) are moved, in order, to argv[1 .. 1 + *noperands). Returns
 * FLAGTAB_OK, FLAGTAB_STOPPED, or -1 with *err filled in (dest of earlier rows
 * may then hold new values). */
int flagtab_parse(const flagtab *t, int argc, char **argv, int *noperands,
                  flagtab_error *err);

/* Prints one line (or more, wrapped at 79 columns) per row that is not
 * HIDDEN: "  -p, --port PORT    help (default 18515)". */
void flagtab_print_help(FILE *f, const flagtab *t);

/* For CALL rows: sets err to a BAD_VALUE error, its message "FLAG: "
 * followed by the formatted text (FLAG "-p/--port", or "--port" without
 * an alias). Returns -1. */
int flagtab_fail(flagtab_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads text as a row of the integer types would (the same words in
 * err), for a CALL row's parts: "--connect port". Returns 0 or -1. */
int flagtab_read_uint(const char *what, const char *text, uint64_t min,
                      uint64_t max, uint64_t *out, flagtab_error *err);

#endif
