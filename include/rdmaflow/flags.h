/* rdmaflow/flags.h: the flag table, tf.app.flags for C programs. A
 * program describes each flag once, in one row: its long name, an optional
 * short alias, its type, where the value goes, its default (as text,
 * parsed like a value), its range and its help text. rf_flags_parse reads
 * argv GNU style (or TensorFlow/absl style, tf_style) from those rows, and
 * rf_flags_print_help prints the options' help from the same rows, so a
 * default or a bound is written in one place:
 *
 *   static int steps;
 *   static const rf_flag_row rows[] = {
 *       RF_FLAG_INT("steps", &steps, "100", 1, 1000000, "N", "steps to run"),
 *       {0}};
 *   rf_flag_error err;
 *   int n;
 *   if (rf_flags_parse(&(rf_flag_table){.rows = rows}, argc, argv, &n,
 *                      &err) < 0) {
 *       fprintf(stderr, "prog: %s\n", err.message);
 *       return 2;
 *   }
 *
 * Every program of rdmaflow (rf-trainer, rf-launch, rf-ckpt, rf-bench,
 * the benchmarks, the example trainer) reads its command line with it.
 * Like the rest of the library it never exits and never prints an error:
 * a failure comes back in an rf_flag_error, whose message names the flag
 * and what was wrong, and the program prints it in its own words (and
 * exits 2). Implemented in core/flags.c. */
#ifndef RDMAFLOW_FLAGS_H
#define RDMAFLOW_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rdmaflow/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a row's destination is, and so how its value is read. */
typedef enum rf_flag_type {
    RF_FLAG_TYPE_BOOL,   /* bool; no value: --NAME sets it (see NEGATABLE) */
    RF_FLAG_TYPE_INT,    /* int, decimal, [min, max] */
    RF_FLAG_TYPE_UINT16, /* uint16_t, decimal, no sign, [min, max] */
    RF_FLAG_TYPE_UINT32, /* uint32_t, decimal, no sign, [min, max] */
    RF_FLAG_TYPE_INT64,  /* int64_t, decimal, [min, max] */
    RF_FLAG_TYPE_UINT64, /* uint64_t, decimal, no sign, [min, max] */
    RF_FLAG_TYPE_SIZE,   /* uint64_t bytes, optional binary K, M or G suffix */
    RF_FLAG_TYPE_DOUBLE, /* double, finite, [dmin, dmax] */
    RF_FLAG_TYPE_STRING, /* const char *, into argv (or at the default) */
    RF_FLAG_TYPE_BUFFER, /* char[size], a copy of the value, < size bytes */
    RF_FLAG_TYPE_ENUM,   /* int: the value of the choice named */
    RF_FLAG_TYPE_CHOICE, /* const char *: the name of the choice given */
    RF_FLAG_TYPE_CALL,   /* the row's call reads the value (its own flag) */
} rf_flag_type;

/* Row bits. */
#define RF_FLAG_HIDDEN    0x01u /* not in the help (internal flags, aliases) */
#define RF_FLAG_NEGATABLE 0x02u /* BOOL: --noNAME clears it */
#define RF_FLAG_STOPS     0x04u /* BOOL: set it and stop (--help, --version) */
#define RF_FLAG_REAL_INT  0x08u /* integers may be written as reals: 1e5 */
#define RF_FLAG_MIN_OPEN  0x10u /* DOUBLE: the value must exceed dmin */
#define RF_FLAG_NONEMPTY  0x20u /* STRING, BUFFER: "" is refused */
#define RF_FLAG_NO_VALUE  0x40u /* CALL: takes no value (value is NULL) */
/* DOUBLE: stored later as a float32, so not 0 must stay a normal float32 */
#define RF_FLAG_FLOAT32 0x80u
/* tf_style, a row with a value: "--NAME" alone is "--NAME=true",
 * "--noNAME" "--NAME=false" */
#define RF_FLAG_OPTIONAL 0x100u
/* Bits a program may give its rows for its own use (the table's given
 * call reads them); the table ignores them. */
#define RF_FLAG_PROGRAM_BITS 0xff0000u

/* One name of an ENUM or CHOICE row; a list ends with a NULL name. */
typedef struct rf_flag_choice {
    const char *name;
    int value;
} rf_flag_choice;

typedef struct rf_flag_error rf_flag_error;
typedef struct rf_flag_row rf_flag_row;

/* A CALL row's reader: value as given (NULL for a NO_VALUE row), ctx the
 * table's. Returns 0, or -1 after rf_flags_fail(err, ...). */
typedef int (*rf_flag_call)(const rf_flag_row *row, const char *value,
                            void *ctx, rf_flag_error *err);

struct rf_flag_row {
    const char *name; /* long name, without "--" */
    char alias;       /* short alias ('p' for -p), or 0 */
    rf_flag_type type;
    void *dest;
    /* The default as text, read like a value before argv (a CALL row's
     * call gets it too); NULL leaves dest as the program set it. The help
     * shows it unless the row is a BOOL. */
    const char *def;
    int64_t min, max;  /* integer rows: both 0 means the type's range */
    double dmin, dmax; /* DOUBLE rows: both 0 means any finite value */
    size_t size;       /* BUFFER rows: sizeof the array */
    const rf_flag_choice *choices; /* ENUM and CHOICE rows */
    rf_flag_call call;             /* CALL rows */
    bool *seen;          /* if not NULL: set when argv gives the flag */
    unsigned bits;       /* RF_FLAG_* row bits */
    const char *metavar; /* the value's name in the help ("PORT") */
    const char *help;    /* the help column (wrapped by the printer) */
};

/* Row macros: a row in a line or two, the fields every row of a type has
 * in a fixed order, then the help text, then (optionally) any other
 * designated field: ".alias = 'p'", ".seen = &given", ".bits = ...".
 *   RF_FLAG_INT("rounds", &o->rounds, "9", 1, 1000, "N", "measured rounds"),
 * A NULL default leaves dest as the program set it; min = max = 0 is the
 * type's whole range (DOUBLE: any finite value). */
#define RF_FLAG_NUMBER_(kind, nm, dst, dflt, lo, hi, mv, ...)                  \
    {                                                                          \
        .name = (nm), .type = (kind), .dest = (dst), .def = (dflt),            \
        .min = (lo), .max = (hi), .metavar = (mv), .help = __VA_ARGS__         \
    }
#define RF_FLAG_INT(...)    RF_FLAG_NUMBER_(RF_FLAG_TYPE_INT, __VA_ARGS__)
#define RF_FLAG_UINT16(...) RF_FLAG_NUMBER_(RF_FLAG_TYPE_UINT16, __VA_ARGS__)
#define RF_FLAG_UINT32(...) RF_FLAG_NUMBER_(RF_FLAG_TYPE_UINT32, __VA_ARGS__)
#define RF_FLAG_INT64(...)  RF_FLAG_NUMBER_(RF_FLAG_TYPE_INT64, __VA_ARGS__)
#define RF_FLAG_UINT64(...) RF_FLAG_NUMBER_(RF_FLAG_TYPE_UINT64, __VA_ARGS__)
#define RF_FLAG_SIZE(...)   RF_FLAG_NUMBER_(RF_FLAG_TYPE_SIZE, __VA_ARGS__)
#define RF_FLAG_DOUBLE(nm, dst, dflt, lo, hi, mv, ...)                         \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_DOUBLE, .dest = (dst),              \
        .def = (dflt), .dmin = (lo), .dmax = (hi), .metavar = (mv),            \
        .help = __VA_ARGS__                                                    \
    }
/* a BOOL; RF_FLAG_STOP: one that stops the parse (--help, --version) */
#define RF_FLAG_BOOL(nm, dst, ...)                                             \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_BOOL, .dest = (dst),                \
        .help = __VA_ARGS__                                                    \
    }
#define RF_FLAG_STOP(nm, dst, ...)                                             \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_BOOL, .dest = (dst),                \
        .bits = RF_FLAG_STOPS, .help = __VA_ARGS__                             \
    }
#define RF_FLAG_STRING(nm, dst, dflt, mv, ...)                                 \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_STRING, .dest = (dst),              \
        .def = (dflt), .metavar = (mv), .help = __VA_ARGS__                    \
    }
/* dst is the array itself (its sizeof is the row's size) */
#define RF_FLAG_BUFFER(nm, dst, dflt, mv, ...)                                 \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_BUFFER, .dest = (dst),              \
        .size = sizeof(dst), .def = (dflt), .metavar = (mv),                   \
        .help = __VA_ARGS__                                                    \
    }
#define RF_FLAG_ENUM(nm, dst, dflt, list, mv, ...)                             \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_ENUM, .dest = (dst), .def = (dflt), \
        .choices = (list), .metavar = (mv), .help = __VA_ARGS__                \
    }
#define RF_FLAG_CHOICE(nm, dst, dflt, list, mv, ...)                           \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_CHOICE, .dest = (dst),              \
        .def = (dflt), .choices = (list), .metavar = (mv), .help = __VA_ARGS__ \
    }
#define RF_FLAG_CALL(nm, fn, dflt, mv, ...)                                    \
    {                                                                          \
        .name = (nm), .type = RF_FLAG_TYPE_CALL, .call = (fn), .def = (dflt),  \
        .metavar = (mv), .help = __VA_ARGS__                                   \
    }

/* A table: rows up to the first row without a name. */
typedef struct rf_flag_table {
    const rf_flag_row *rows;
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
    void (*given)(const rf_flag_row *row, void *ctx);
} rf_flag_table;

typedef enum rf_flag_error_kind {
    RF_FLAG_ERR_NONE = 0,
    RF_FLAG_ERR_UNKNOWN,       /* no row has the name */
    RF_FLAG_ERR_AMBIGUOUS,     /* a prefix of several long names */
    RF_FLAG_ERR_MISSING_VALUE, /* the last argument, and it needs a value */
    RF_FLAG_ERR_EXTRA_VALUE,   /* --NAME=V for a flag that takes none */
    RF_FLAG_ERR_BAD_VALUE,     /* the value is malformed or out of range */
    RF_FLAG_ERR_DEFAULT,       /* a row's own default is bad (a bug) */
    RF_FLAG_ERR_OPERAND,       /* tf_style: an argument that is no flag */
} rf_flag_error_kind;

struct rf_flag_error {
    rf_flag_error_kind kind;
    const rf_flag_row *row; /* NULL for UNKNOWN and AMBIGUOUS */
    const char *arg;        /* the argument as typed ("--rtol=abc", "-p") */
    const char *value;      /* the value, or NULL */
    /* What went wrong, naming the flag: "unknown option '--x'", "option
     * '-p' needs a value", "-p/--port: 65536 is outside [0, 65535]". */
    char message[384];
};

/* rf_flags_parse's answers (besides -1 for an error). */
#define RF_FLAGS_OK      0
#define RF_FLAGS_STOPPED 1 /* a STOP row was given; later arguments unread */

/* Applies every row's default, then reads argv[1 .. argc) in order:
 * "--NAME=V", "--NAME V", "--NAME" (BOOL), "--noNAME" (NEGATABLE),
 * "-a", "-aV", "-a V" and clusters of BOOL aliases ("-aN"); "--" ends the
 * flags; a value takes the next argument even when it starts with '-'
 * (unless no_dashed_values and it starts with "--"). Operands (any other
 * argument, "-" too) are moved, in order, to argv[1 .. 1 + *noperands). Returns
 * RF_FLAGS_OK, RF_FLAGS_STOPPED, or -1 with *err filled in (dest of earlier
 * rows may then hold new values). */
RF_API int rf_flags_parse(const rf_flag_table *t, int argc, char **argv,
                          int *noperands, rf_flag_error *err);

/* Prints one line (or more, wrapped at 79 columns) per row that is not
 * HIDDEN: "  -p, --port PORT    help (default 18515)". */
RF_API void rf_flags_print_help(FILE *f, const rf_flag_table *t);

/* For CALL rows: sets err to a BAD_VALUE error, its message "FLAG: "
 * followed by the formatted text (FLAG "-p/--port", or "--port" without
 * an alias). Returns -1. */
RF_API int rf_flags_fail(rf_flag_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads text as a row of the integer types would (the same words in
 * err), for a CALL row's parts: "--connect port". Returns 0 or -1. */
RF_API int rf_flags_read_uint(const char *what, const char *text, uint64_t min,
                              uint64_t max, uint64_t *out, rf_flag_error *err);

#ifdef __cplusplus
}
#endif

#endif
