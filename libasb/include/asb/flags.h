/*
 * flags.h - table-driven command-line flags: a program describes each flag
 * once, as one row {name, kind, field, placeholder, help, setter}, and the
 * same table drives parsing argv (Go-style or GNU getopt-style), lookups by
 * name (config files) and the --help listing.
 */
#ifndef ASB_FLAGS_H
#define ASB_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a row's value is parsed and stored. */
typedef enum {
	ASB_FLAG_TEXT = 0,     /**< not a flag: `help` is a line of --help text */
	ASB_FLAG_BOOL,         /**< bool; Go spellings (1, t, true, 0, f, false...) */
	ASB_FLAG_INT,          /**< int; Go strconv.ParseInt syntax */
	ASB_FLAG_LONG,         /**< long; same syntax */
	ASB_FLAG_I64,          /**< int64_t; same syntax */
	ASB_FLAG_DURATION_MS,  /**< long milliseconds of a Go duration (asb/duration.h) */
	ASB_FLAG_STRING,       /**< char *, owned: the value is strdup'd, the old one freed */
	ASB_FLAG_STRING_REF,   /**< const char *, borrowed: points at the argv word */
	ASB_FLAG_CUSTOM,       /**< the row's `set` does the parsing and storing */
	ASB_FLAG_ACTION        /**< takes no value: parsing stops at it (--help, --version) */
} asb_flag_kind;

typedef struct asb_flag asb_flag;

/**
 * A setter: parses `value` (never NULL; "true" for a bare boolean) into the
 * options struct `opts`. For ASB_FLAG_CUSTOM rows it does all the work; for
 * other kinds it runs after the built-in store, as an extra check.
 * @return 0; -1 when `value` is not of the flag's type (what Go's flag
 *         package refuses while parsing, exit status 2); ASB_FLAG_RULE when
 *         it is but a rule of the program refuses it (what a Go program
 *         checks after parsing, exit status 1). Either way the reason
 *         ("must be ...") is in `why` (NUL-terminated, truncated to `cap`).
 */
/** A setter's return for a well-formed value that a rule refuses (a bound). */
#define ASB_FLAG_RULE (-2)

typedef int (*asb_flag_set_fn)(void *opts, const asb_flag *fl, const char *value, char *why,
                               size_t cap);

/** One flag (or one line of help text). Tables end with a row whose kind is
 *  ASB_FLAG_TEXT and whose help is NULL (ASB_FLAGS_END). */
struct asb_flag {
	const char *name;      /**< without dashes; NULL for ASB_FLAG_TEXT rows */
	asb_flag_kind kind;
	size_t off;            /**< offset of the field in the options struct */
	const char *arg;       /**< placeholder in --help ("N", "[=B]"); NULL: none */
	const char *help;      /**< help text; '\n' continues on an indented line */
	asb_flag_set_fn set;   /**< setter (CUSTOM) or extra check; may be NULL */
	long min, max;         /**< bounds for setters that take them (both 0: unused) */
	char short_opt;        /**< getopt short option ('h'), 0: none */
};

/** A row: flag `name_` of `kind_` stored at offset `off_`, shown as
 *  "--name ARG" with `help_` (designated, so unnamed fields are zero). */
#define ASB_FLAG(name_, kind_, off_, arg_, help_) \
	{ .name = (name_), .kind = (kind_), .off = (off_), .arg = (arg_), .help = (help_) }
/** As ASB_FLAG() with a setter (CUSTOM) or extra check `set_`. */
#define ASB_FLAG_FN(name_, kind_, off_, arg_, help_, set_) \
	{ .name = (name_), .kind = (kind_), .off = (off_), .arg = (arg_), .help = (help_), \
	  .set = (set_) }
/** A line of --help text between the flags. */
#define ASB_FLAG_LINE(text_) { .kind = ASB_FLAG_TEXT, .help = (text_) }
/** The row that ends a table. */
#define ASB_FLAGS_END { .kind = ASB_FLAG_TEXT }

/** How argv is read. */
typedef enum {
	/** Go's flag package: -name or --name, "=value" or the next word
	 *  (booleans: "=value" only), stops at "--", no other words allowed;
	 *  -X is also the row whose short option is X (-h); an ACTION row
	 *  given "=false" is skipped (Go's -version=false). An unknown flag's
	 *  message names it as given (`--nope`), never the program. */
	ASB_FLAGS_GO = 0,
	/** GNU getopt_long(): --name, unique prefixes, booleans take an optional
	 *  "=value", words are permuted to the end and are an error there. */
	ASB_FLAGS_GETOPT,
	/** As ASB_FLAGS_GETOPT with getopt_long_only(): -name works too. */
	ASB_FLAGS_GETOPT_LONG_ONLY
} asb_flags_style;

/** What asb_flags_parse() found. */
typedef enum {
	ASB_FLAGS_DONE = 0,     /**< every word was a flag with a good value */
	ASB_FLAGS_ACTION,       /**< an ACTION row was given: `flag` says which */
	ASB_FLAGS_BAD_VALUE,    /**< `flag` got `value`, refused because of `why` */
	ASB_FLAGS_UNKNOWN,      /**< `word` is no flag (GO: `name`/`name_len` its name) */
	ASB_FLAGS_NEEDS_VALUE,  /**< `flag` came last without its value (GO only) */
	ASB_FLAGS_UNEXPECTED,   /**< `word` is not a flag (a positional argument) */
	ASB_FLAGS_NOMEM         /**< allocation failed */
} asb_flags_status;

/** The outcome of asb_flags_parse(); pointers point into argv or the table. */
typedef struct {
	asb_flags_status status;
	const asb_flag *flag;   /**< ACTION, BAD_VALUE, NEEDS_VALUE */
	const char *value;      /**< BAD_VALUE */
	const char *word;       /**< UNKNOWN, UNEXPECTED: the argv word */
	const char *name;       /**< UNKNOWN (GO): the name, without dashes */
	size_t name_len;
	char why[160];          /**< BAD_VALUE: the setter's reason */
	bool rule;              /**< BAD_VALUE: the setter returned ASB_FLAG_RULE
	                             (the value is well formed, a rule refused it) */
} asb_flags_result;

/**
 * The flag row named by the first `len` bytes of `name` (ACTION rows
 * included, TEXT rows never), or NULL. Pure; thread-safe.
 */
ASB_EXTERN const asb_flag *asb_flags_find(const asb_flag *table, const char *name, size_t len);

/**
 * Sets one flag of `opts` from its text, by the row's kind, then runs its
 * setter (if any). Not for TEXT or ACTION rows. Thread-safe on distinct `opts`.
 * @return 0, or -1 (or the setter's ASB_FLAG_RULE) with the reason in `why`
 *         ("must be true or false", "out of memory", or the setter's).
 */
ASB_EXTERN int asb_flags_set(const asb_flag *fl, void *opts, const char *value, char *why,
                             size_t cap);

/**
 * Parses argv[1..argc) into `opts` by `table`, in `style`, stopping at the
 * first problem or ACTION row. `seen` (may be NULL) has one bool per table
 * row and is set for each row given. GETOPT styles use the global getopt
 * state (optind...), so they are not thread-safe and reset it.
 * @return ASB_OK when `res->status` is ASB_FLAGS_DONE or ASB_FLAGS_ACTION,
 *         ASB_ENOMEM for ASB_FLAGS_NOMEM, else ASB_EINVAL (last error set:
 *         a message naming the flag); `res` says what was found either way.
 */
ASB_EXTERN int asb_flags_parse(const asb_flag *table, asb_flags_style style, void *opts,
                               int argc, char **argv, bool *seen, asb_flags_result *res);

/** The layout of the --help listing. */
typedef struct {
	int width;          /**< left column (after two spaces) padded to this many bytes */
	int overflow_gap;   /**< spaces after a left column longer than `width` */
	bool show_short;    /**< "-h, --help" for rows with a short option */
} asb_flags_layout;

/**
 * Prints one --help line: two spaces, `left` padded to the layout's width,
 * one space (or overflow_gap when `left` is wider), `help`; each '\n' in
 * `help` goes on to a line indented to the help column.
 */
ASB_EXTERN void asb_flags_usage_line(FILE *out, const asb_flags_layout *lay, const char *left,
                                     const char *help);

/**
 * Prints the table's rows in order: flags as asb_flags_usage_line() of
 * "--name ARG" (no space before an `arg` starting with '['), TEXT rows
 * verbatim followed by a newline.
 */
ASB_EXTERN void asb_flags_usage(FILE *out, const asb_flag *table, const asb_flags_layout *lay);

#ifdef __cplusplus
}
#endif
#endif
