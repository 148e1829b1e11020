/* Shell scripts read into commands of words (see shell-script.h).
 *
 * A lexer walks the text once, character by character, keeping the line
 * and column: words are built with quotes removed and expansions
 * substituted from the variables assigned so far, assignments at the start
 * of a command go into the variables instead of the command, and the
 * separators end commands.
 */
#include "io/input/shell-script.h"

#include <fnmatch.h>
#include <string.h>

#include "core/error.h"

/* ---- words ---- */

TpsShellWord *
tps_shell_word_new(const char *text, guint line, guint column, gboolean unresolved)
{
    TpsShellWord *w = g_new0(TpsShellWord, 1);
    w->text = g_strdup(text);
    w->line = line;
    w->column = column;
    w->unresolved = unresolved;
    return w;
}

void
tps_shell_word_free(gpointer word)
{
    TpsShellWord *w = word;
    if (w != NULL)
        g_free(w->text);
    g_free(w);
}

static TpsShellWord *
word_copy(const TpsShellWord *w)
{
    TpsShellWord *c = tps_shell_word_new(w->text, w->line, w->column, w->unresolved);
    c->doubt = w->doubt;
    return c;
}

static void
doubt_free(gpointer p)
{
    TpsShellDoubt *d = p;
    if (d != NULL)
        g_free(d->message);
    g_free(d);
}

/* A variable: one word, or the elements of an array. */
typedef struct {
    GPtrArray *words;
    gboolean array;
    const TpsShellDoubt *doubt; /* assigned in a branch that may not run */
} Var;

static void
var_free(gpointer p)
{
    Var *v = p;
    if (v != NULL)
        g_ptr_array_unref(v->words);
    g_free(v);
}

/* ---- the shell reader ---- */

/* Deeper than any launch script nests ${A:-${B:-...}} or $((...)). */
#define MAX_DEPTH 16

/* The branch of an if or a case being read: it runs, it may run (a test
 * before it could not be evaluated), or it does not run. */
typedef enum { BRANCH_RUNS, BRANCH_MAY, BRANCH_NOT } Branch;

/* An if ... fi or case ... esac being read. */
typedef struct {
    gboolean is_case;
    gboolean outer_active; /* the construct itself runs */
    gboolean taken;        /* a branch that runs was found */
    gboolean doubt;        /* a test that could not be evaluated was met */
    Branch branch;
    const TpsShellDoubt *outer_doubt; /* the construct itself may not run */
    TpsShellDoubt *made;   /* the doubt of its branches that may run */
    guint line, column;    /* the if or case */
    GString *branches;     /* the branches, for the message */
    char *why;             /* the first test not evaluated, and where */
    guint why_line, why_column;
    TpsShellWord *word;    /* case WORD in */
} Frame;

static void
frame_free(gpointer p)
{
    Frame *f = p;
    if (f == NULL)
        return;
    g_string_free(f->branches, TRUE);
    g_free(f->why);
    tps_shell_word_free(f->word);
    g_free(f);
}

typedef struct {
    const char *file;
    const char *s;
    gsize len, pos;
    guint line, column;
    GHashTable *vars;    /* name -> Var */
    GPtrArray *commands; /* GPtrArray of TpsShellWord */
    GPtrArray *current;  /* the command being read */
    GPtrArray *frames;   /* the if and case constructs open, innermost last */
    gboolean active;     /* what is read runs, or may (no open construct's branch does not) */
    const TpsShellDoubt *doubt; /* what is read may not run: why */
    const TpsShellDoubt *pending; /* a variable of `doubt` expanded to nothing in the command */
    GPtrArray *doubts;   /* TpsShellDoubt, owned */
    gboolean cond;       /* the command read is the test of an if or elif */
    guint cond_line, cond_column;
} Lexer;

static int
peek(const Lexer *lx, gsize ahead)
{
    return lx->pos + ahead < lx->len ? (unsigned char)lx->s[lx->pos + ahead] : -1;
}

static void
advance(Lexer *lx)
{
    if (lx->pos >= lx->len)
        return;
    if (lx->s[lx->pos] == '\n') {
        lx->line++;
        lx->column = 1;
    } else {
        lx->column++;
    }
    lx->pos++;
}

static gboolean
lex_error(const Lexer *lx, guint line, guint column, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

static gboolean
lex_error(const Lexer *lx, guint line, guint column, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tps_input_error_atv(error, lx->file, line, column, fmt, ap);
    va_end(ap);
    return FALSE;
}

static gboolean
is_name_start(int c)
{
    return c == '_' || g_ascii_isalpha(c);
}

static gboolean
is_name_char(int c)
{
    return c == '_' || g_ascii_isalnum(c);
}

/* A word being built: its text, where it starts, and the position of the
 * variable it consists of when it is exactly one scalar expansion. */
typedef struct {
    GString *text;
    gboolean started, unresolved;
    guint line, column;
    const TpsShellWord *sole; /* the variable's word while nothing else was added */
    gboolean mixed;   /* something besides one expansion */
    const TpsShellDoubt *doubt; /* of a variable expanded in it */
} Building;

static void
building_start(Building *b, const Lexer *lx)
{
    if (!b->started) {
        b->started = TRUE;
        b->line = lx->line;
        b->column = lx->column;
    }
}

static void
building_literal(Building *b, const Lexer *lx, const char *text, gsize n)
{
    building_start(b, lx);
    g_string_append_len(b->text, text, (gssize)n);
    b->mixed = TRUE;
}

/* End the word into `out` (when one was started). */
static void
building_finish(Building *b, GPtrArray *out)
{
    if (!b->started)
        return;
    TpsShellWord *w;
    if (b->sole != NULL && !b->mixed)
        w = tps_shell_word_new(b->text->str, b->sole->line, b->sole->column, b->unresolved);
    else
        w = tps_shell_word_new(b->text->str, b->line, b->column, b->unresolved);
    w->doubt = b->doubt;
    g_ptr_array_add(out, w);
    g_string_truncate(b->text, 0);
    b->started = b->unresolved = b->mixed = FALSE;
    b->sole = NULL;
    b->doubt = NULL;
}

/* ---- arithmetic: $(( )) of integers, + - * / % and parentheses ---- */

typedef struct {
    const char *s;
    gboolean ok;
} Arith;

static gint64 arith_sum(Arith *a);

static void
arith_skip(Arith *a)
{
    while (*a->s == ' ' || *a->s == '\t')
        a->s++;
}

static gint64
arith_atom(Arith *a)
{
    arith_skip(a);
    if (*a->s == '(') {
        a->s++;
        gint64 v = arith_sum(a);
        arith_skip(a);
        if (*a->s != ')')
            a->ok = FALSE;
        else
            a->s++;
        return v;
    }
    if (*a->s == '-') {
        a->s++;
        return -arith_atom(a);
    }
    if (!g_ascii_isdigit(*a->s)) {
        a->ok = FALSE;
        return 0;
    }
    char *end;
    guint64 v = g_ascii_strtoull(a->s, &end, 10);
    if (v > G_MAXINT32)
        a->ok = FALSE;
    a->s = end;
    return (gint64)v;
}

static gint64
arith_product(Arith *a)
{
    gint64 v = arith_atom(a);
    for (;;) {
        arith_skip(a);
        char op = *a->s;
        if (op != '*' && op != '/' && op != '%')
            return v;
        a->s++;
        gint64 r = arith_atom(a);
        if (!a->ok)
            return 0;
        if (op == '*') {
            if (ABS(v) > G_MAXINT32 || ABS(r) > G_MAXINT32)
                a->ok = FALSE;
            else
                v *= r;
        } else if (r == 0) {
            a->ok = FALSE;
        } else {
            v = op == '/' ? v / r : v % r;
        }
    }
}

static gint64
arith_sum(Arith *a)
{
    gint64 v = arith_product(a);
    for (;;) {
        arith_skip(a);
        char op = *a->s;
        if (op != '+' && op != '-')
            return v;
        a->s++;
        gint64 r = arith_product(a);
        if (ABS(v) > G_MAXINT32 || ABS(r) > G_MAXINT32)
            a->ok = FALSE;
        v = op == '+' ? v + r : v - r;
    }
}

/* ---- expansions ---- */

static const Var *
lookup(const Lexer *lx, const char *name)
{
    return g_hash_table_lookup(lx->vars, name);
}

/* The text of `name` as a scalar (an array's first element), or NULL. */
static const TpsShellWord *
scalar_of(const Lexer *lx, const char *name)
{
    const Var *v = lookup(lx, name);
    if (v == NULL || v->words->len == 0)
        return NULL;
    return g_ptr_array_index(v->words, 0);
}

/* Substitute the variables of an arithmetic expression ($X, ${X}, X) and
 * evaluate it. */
static gboolean
arith_eval(const Lexer *lx, const char *expr, gint64 *out, const TpsShellDoubt **doubt)
{
    GString *sub = g_string_new(NULL);
    gboolean ok = TRUE;
    for (const char *p = expr; *p != '\0';) {
        if (*p == '$' || is_name_start(*p)) {
            gboolean braced = FALSE;
            if (*p == '$') {
                p++;
                if (*p == '{')
                    braced = TRUE, p++;
            }
            const char *start = p;
            while (is_name_char(*p))
                p++;
            g_autofree char *name = g_strndup(start, (gsize)(p - start));
            if (braced) {
                if (*p != '}')
                    ok = FALSE;
                else
                    p++;
            }
            const TpsShellWord *w = name[0] != '\0' ? scalar_of(lx, name) : NULL;
            if (w == NULL || w->unresolved || w->text[0] == '\0') {
                ok = FALSE;
                break;
            }
            if (w->doubt != NULL)
                *doubt = w->doubt;
            g_string_append_printf(sub, "(%s)", w->text);
        } else {
            g_string_append_c(sub, *p++);
        }
    }
    Arith a = {.s = sub->str, .ok = ok};
    gint64 v = ok ? arith_sum(&a) : 0;
    arith_skip(&a);
    ok = a.ok && *a.s == '\0';
    g_string_free(sub, TRUE);
    *out = v;
    return ok;
}

/* Read up to the bracket that closes the one just passed (`open`..`close`,
 * nesting counted); the text between is returned, the closing bracket
 * consumed. */
static char *
read_balanced(Lexer *lx, char open, char close, gboolean *closed)
{
    GString *s = g_string_new(NULL);
    int depth = 1;
    *closed = FALSE;
    while (peek(lx, 0) != -1) {
        int c = peek(lx, 0);
        if (c == open)
            depth++;
        else if (c == close && --depth == 0) {
            advance(lx);
            *closed = TRUE;
            break;
        }
        g_string_append_c(s, (char)c);
        advance(lx);
    }
    return g_string_free(s, FALSE);
}

/* Append the words of a value to the word being built: `quoted` keeps it
 * one word, otherwise it is split at blanks as the shell splits unquoted
 * expansions. */
static void
append_value(Building *b, const Lexer *lx, const TpsShellWord *value, gboolean quoted,
             GPtrArray *out)
{
    building_start(b, lx);
    if (value->unresolved)
        b->unresolved = TRUE;
    if (value->doubt != NULL)
        b->doubt = value->doubt;
    const char *t = value->text;
    if (quoted || strpbrk(t, " \t\n") == NULL) {
        if (b->text->len == 0 && !b->mixed && b->sole == NULL)
            b->sole = value;
        else
            b->mixed = TRUE;
        g_string_append(b->text, t);
        return;
    }
    g_auto(GStrv) parts = g_strsplit_set(t, " \t\n", -1);
    gboolean first = TRUE;
    for (guint i = 0; parts[i] != NULL; i++) {
        if (parts[i][0] == '\0')
            continue;
        if (!first) {
            b->mixed = TRUE;
            building_finish(b, out);
            building_start(b, lx);
            b->doubt = value->doubt;
        }
        b->mixed = TRUE;
        g_string_append(b->text, parts[i]);
        first = FALSE;
    }
}

/* An unset variable or a command substitution: kept as written, marked. */
static void
append_unresolved(Building *b, const Lexer *lx, const char *as_written)
{
    building_start(b, lx);
    g_string_append(b->text, as_written);
    b->unresolved = TRUE;
    b->mixed = TRUE;
}

/* The default of ${NAME:-default}: quotes removed, $NAME expanded (one
 * level). */
static void
expand_default(Lexer *lx, const char *text, Building *b, gboolean quoted, GPtrArray *out)
{
    GString *lit = g_string_new(NULL);
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"' || *p == '\'')
            continue;
        if (*p == '$' && (is_name_start(p[1]) || p[1] == '{')) {
            gboolean braced = p[1] == '{';
            const char *q = p + 1 + (braced ? 1 : 0), *start = q;
            while (is_name_char(*q))
                q++;
            g_autofree char *name = g_strndup(start, (gsize)(q - start));
            const TpsShellWord *w = scalar_of(lx, name);
            if (w != NULL && !w->unresolved) {
                g_string_append(lit, w->text);
            } else {
                building_literal(b, lx, lit->str, lit->len);
                g_string_truncate(lit, 0);
                append_unresolved(b, lx, name);
            }
            p = braced && *q == '}' ? q : q - 1;
            continue;
        }
        g_string_append_c(lit, *p);
    }
    TpsShellWord w = {.text = lit->str, .line = b->started ? b->line : lx->line,
              .column = b->started ? b->column : lx->column};
    append_value(b, lx, &w, quoted, out);
    b->mixed = TRUE;
    g_string_free(lit, TRUE);
}

/* $((expression)), the $(( passed: its value, or kept as written when it
 * names what the script does not set. (`line`, `column`: the $.) */
static gboolean
lex_arithmetic(Lexer *lx, Building *b, guint line, guint column, GError **error)
{
    gboolean closed;
    g_autofree char *expr = read_balanced(lx, '(', ')', &closed);
    if (!closed || peek(lx, 0) != ')')
        return lex_error(lx, line, column, error, "$(( without its closing ))");
    advance(lx);
    gint64 v;
    const TpsShellDoubt *doubt = NULL;
    if (arith_eval(lx, expr, &v, &doubt)) {
        g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT, v);
        building_start(b, lx);
        if (doubt != NULL)
            b->doubt = doubt;
        g_string_append(b->text, text);
        b->mixed = TRUE;
    } else {
        g_autofree char *as_written = g_strdup_printf("$((%s))", expr);
        append_unresolved(b, lx, as_written);
    }
    return TRUE;
}

/* $(command), the $( passed: kept as written. */
static gboolean
lex_command_substitution(Lexer *lx, Building *b, guint line, guint column, GError **error)
{
    gboolean closed;
    g_autofree char *cmd = read_balanced(lx, '(', ')', &closed);
    if (!closed)
        return lex_error(lx, line, column, error, "$( without its closing )");
    g_autofree char *as_written = g_strdup_printf("$(%s)", cmd);
    append_unresolved(b, lx, as_written);
    return TRUE;
}

/* ${NAME[@]}: every element of the array a word of its own, at its place
 * in the array. */
static void
expand_array(Building *b, const Var *v, GPtrArray *out)
{
    if (v == NULL)
        return;
    if (b->text->len == 0 && !b->unresolved)
        b->started = b->mixed = FALSE, b->sole = NULL; /* only the quote opened */
    else
        building_finish(b, out);
    for (guint i = 0; i < v->words->len; i++)
        g_ptr_array_add(out, word_copy(g_ptr_array_index(v->words, i)));
}

/* ${...}, the ${ passed: an array's elements, a value with its default
 * (:- or -), a value; anything else kept as written. */
static gboolean
lex_braced(Lexer *lx, Building *b, gboolean quoted, GPtrArray *out, guint line, guint column,
           GError **error)
{
    gboolean closed;
    g_autofree char *inner = read_balanced(lx, '{', '}', &closed);
    if (!closed)
        return lex_error(lx, line, column, error, "${ without its closing }");
    const char *p = inner;
    while (is_name_char(*p))
        p++;
    g_autofree char *name = g_strndup(inner, (gsize)(p - inner));
    const Var *v = name[0] != '\0' ? lookup(lx, name) : NULL;
    if (name[0] != '\0' && (strcmp(p, "[@]") == 0 || strcmp(p, "[*]") == 0)) {
        if (v != NULL && v->doubt != NULL && v->words->len == 0)
            lx->pending = v->doubt;
        expand_array(b, v, out);
        return TRUE;
    }
    if (name[0] != '\0' && (g_str_has_prefix(p, ":-") || g_str_has_prefix(p, "-"))) {
        const TpsShellWord *w = scalar_of(lx, name);
        gboolean colon = p[0] == ':';
        if (w != NULL && !(colon && w->text[0] == '\0'))
            append_value(b, lx, w, quoted, out);
        else
            expand_default(lx, p + (colon ? 2 : 1), b, quoted, out);
        return TRUE;
    }
    if (name[0] != '\0' && *p == '\0') {
        const TpsShellWord *w = scalar_of(lx, name);
        if (w != NULL) {
            append_value(b, lx, w, quoted, out);
        } else {
            g_autofree char *as_written = g_strdup_printf("${%s}", inner);
            append_unresolved(b, lx, as_written);
        }
        return TRUE;
    }
    g_autofree char *as_written = g_strdup_printf("${%s}", inner);
    append_unresolved(b, lx, as_written);
    return TRUE;
}

/* $NAME, at the name: its value, or kept as written when unset. */
static void
lex_name_expansion(Lexer *lx, Building *b, gboolean quoted, GPtrArray *out)
{
    GString *name = g_string_new(NULL);
    while (is_name_char(peek(lx, 0))) {
        g_string_append_c(name, (char)peek(lx, 0));
        advance(lx);
    }
    const TpsShellWord *w = scalar_of(lx, name->str);
    if (w != NULL) {
        append_value(b, lx, w, quoted, out);
    } else {
        g_autofree char *as_written = g_strdup_printf("$%s", name->str);
        append_unresolved(b, lx, as_written);
    }
    g_string_free(name, TRUE);
}

/* An expansion at a $ (`quoted`: inside double quotes): its words
 * appended to `b`, or to `out` for the words it ends. */
static gboolean
lex_dollar(Lexer *lx, Building *b, gboolean quoted, GPtrArray *out, int depth, GError **error)
{
    guint line = lx->line, column = lx->column;
    if (depth > MAX_DEPTH)
        return lex_error(lx, line, column, error, "expansions nested too deeply");
    advance(lx); /* $ */
    int c = peek(lx, 0);
    if (c == '(' && peek(lx, 1) == '(') {
        advance(lx), advance(lx);
        return lex_arithmetic(lx, b, line, column, error);
    }
    if (c == '(') {
        advance(lx);
        return lex_command_substitution(lx, b, line, column, error);
    }
    if (c == '{') {
        advance(lx);
        return lex_braced(lx, b, quoted, out, line, column, error);
    }
    if (is_name_start(c)) {
        lex_name_expansion(lx, b, quoted, out);
        return TRUE;
    }
    if (c != -1 && (g_ascii_isdigit(c) || strchr("@*#?$!-", c) != NULL)) {
        /* Positional and special parameters: what the script is given when
         * run, unknown here. */
        char as_written[3] = {'$', (char)c, '\0'};
        advance(lx);
        append_unresolved(b, lx, as_written);
        return TRUE;
    }
    building_literal(b, lx, "$", 1);
    return TRUE;
}

/* A character that ends a word outside quotes (or the end, -1). */
static gboolean
ends_word(int c)
{
    return c == -1 || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == '&' ||
           c == '|' || c == '(' || c == ')' || c == '<' || c == '>';
}

/* A backslash outside quotes: a line continuation dropped, else the next
 * character taken as it is. */
static void
lex_escaped(Lexer *lx, Building *b)
{
    advance(lx);
    int d = peek(lx, 0);
    if (d == '\n') {
        advance(lx);
        return;
    }
    if (d == -1)
        return;
    char ch = (char)d;
    advance(lx);
    building_literal(b, lx, &ch, 1);
}

/* `command`, at the backquote: kept as "`...`". */
static gboolean
lex_backquoted(Lexer *lx, Building *b, GError **error)
{
    guint line = lx->line, column = lx->column;
    advance(lx);
    gboolean closed;
    g_free(read_balanced(lx, '\0', '`', &closed));
    if (!closed)
        return lex_error(lx, line, column, error, "backquote (`) without its closing backquote");
    append_unresolved(b, lx, "`...`");
    return TRUE;
}

/* '...', at the quote: the text between as it stands. */
static gboolean
lex_single_quoted(Lexer *lx, Building *b, GError **error)
{
    guint line = lx->line, column = lx->column;
    building_start(b, lx);
    b->mixed = TRUE;
    advance(lx);
    while (peek(lx, 0) != -1 && peek(lx, 0) != '\'') {
        g_string_append_c(b->text, (char)peek(lx, 0));
        advance(lx);
    }
    if (peek(lx, 0) == -1)
        return lex_error(lx, line, column, error, "quote (') without its closing quote");
    advance(lx);
    return TRUE;
}

/* "...", at the quote: expansions not split, a backslash escaping only
 * " \ $ ` and the line end. */
static gboolean
lex_double_quoted(Lexer *lx, Building *b, GPtrArray *out, GError **error)
{
    guint line = lx->line, column = lx->column;
    building_start(b, lx);
    advance(lx);
    for (;;) {
        int d = peek(lx, 0);
        if (d == -1)
            return lex_error(lx, line, column, error, "quote (\") without its closing quote");
        if (d == '"') {
            advance(lx);
            break;
        }
        if (d == '\\') {
            int e = peek(lx, 1);
            if (e == '\n') {
                advance(lx), advance(lx);
                continue;
            }
            if (e == '"' || e == '\\' || e == '$' || e == '`') {
                char ch = (char)e;
                advance(lx), advance(lx);
                building_literal(b, lx, &ch, 1);
                continue;
            }
        }
        if (d == '$') {
            if (!lex_dollar(lx, b, TRUE, out, 0, error))
                return FALSE;
            continue;
        }
        if (d == '`') {
            if (!lex_backquoted(lx, b, error))
                return FALSE;
            continue;
        }
        char ch = (char)d;
        advance(lx);
        building_literal(b, lx, &ch, 1);
    }
    b->mixed = b->mixed || b->sole == NULL;
    return TRUE;
}

/* Read one word (or the several an unquoted expansion splits into) into
 * `out`. */
static gboolean
lex_word(Lexer *lx, GPtrArray *out, GError **error)
{
    Building b = {.text = g_string_new(NULL)};
    gboolean ok = TRUE;
    for (int c = peek(lx, 0); ok && !ends_word(c); c = peek(lx, 0)) {
        if (!(c == '\\' && peek(lx, 1) == '\n'))
            building_start(&b, lx); /* the word starts at its first character */
        if (c == '\\') {
            lex_escaped(lx, &b);
        } else if (c == '\'') {
            ok = lex_single_quoted(lx, &b, error);
        } else if (c == '"') {
            ok = lex_double_quoted(lx, &b, out, error);
        } else if (c == '$') {
            ok = lex_dollar(lx, &b, FALSE, out, 0, error);
        } else if (c == '`') {
            ok = lex_backquoted(lx, &b, error);
        } else {
            char ch = (char)c;
            advance(lx);
            building_literal(&b, lx, &ch, 1);
        }
    }
    if (ok)
        building_finish(&b, out);
    g_string_free(b.text, TRUE);
    return ok;
}

/* Blanks, line continuations and (with `newlines`) line ends and
 * comments. */
static void
skip_blanks(Lexer *lx, gboolean newlines)
{
    for (;;) {
        int c = peek(lx, 0);
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            advance(lx);
        } else if (c == '\\' && peek(lx, 1) == '\n') {
            advance(lx), advance(lx);
        } else if (newlines && c == '#') {
            while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
                advance(lx);
        } else {
            return;
        }
    }
}

/* NAME= or NAME+= at the reading position: the length of NAME, 0 if not an
 * assignment. */
static gsize
assignment_at(const Lexer *lx, gboolean *append)
{
    if (!is_name_start(peek(lx, 0)))
        return 0;
    gsize n = 1;
    while (is_name_char(peek(lx, n)))
        n++;
    *append = peek(lx, n) == '+';
    if (peek(lx, n + (*append ? 1 : 0)) != '=')
        return 0;
    return n;
}

/* ---- if and case ---- */

typedef enum { T_FALSE, T_TRUE, T_UNKNOWN } Truth;

/* Whether a string matches a pattern of [[ == ]] or case (*, ?, [...]). */
static gboolean
glob_match(const char *pattern, const char *text)
{
    return fnmatch(pattern, text, 0) == 0;
}

static gboolean
parse_int(const char *text, gint64 *out)
{
    return g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, out, NULL);
}

/* The test of `n` words inside [ ], [[ ]] or after test (`pattern`: the
 * right side of == is a pattern, as in [[ ]]). `*why` is set to the
 * word that leaves it unknown. */
static Truth
eval_test(TpsShellWord **w, guint n, gboolean pattern, const TpsShellWord **why)
{
    gboolean negate = FALSE;
    while (n > 1 && strcmp(w[0]->text, "!") == 0)
        negate = !negate, w++, n--;
    for (guint i = 0; i < n; i++)
        if (w[i]->unresolved || w[i]->doubt != NULL) {
            *why = w[i];
            return T_UNKNOWN;
        }
    Truth t = T_UNKNOWN;
    if (n == 0) {
        t = T_FALSE;
    } else if (n == 1) {
        t = w[0]->text[0] != '\0' ? T_TRUE : T_FALSE;
    } else if (n == 2 && strcmp(w[0]->text, "-z") == 0) {
        t = w[1]->text[0] == '\0' ? T_TRUE : T_FALSE;
    } else if (n == 2 && strcmp(w[0]->text, "-n") == 0) {
        t = w[1]->text[0] != '\0' ? T_TRUE : T_FALSE;
    } else if (n == 3) {
        const char *op = w[1]->text, *l = w[0]->text, *r = w[2]->text;
        static const char *const numeric[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge", NULL};
        if (strcmp(op, "=") == 0 || strcmp(op, "==") == 0 || strcmp(op, "!=") == 0) {
            gboolean eq = pattern ? glob_match(r, l) : strcmp(l, r) == 0;
            t = (eq == (op[0] != '!')) ? T_TRUE : T_FALSE;
        } else if (g_strv_contains(numeric, op)) {
            gint64 a, b;
            if (parse_int(l, &a) && parse_int(r, &b)) {
                gboolean v = op[1] == 'e' && op[2] == 'q'   ? a == b
                             : op[1] == 'n'                 ? a != b
                             : op[1] == 'l' && op[2] == 't' ? a < b
                             : op[1] == 'l'                 ? a <= b
                             : op[2] == 't'                 ? a > b
                                                            : a >= b;
                t = v ? T_TRUE : T_FALSE;
            }
        }
    }
    if (t == T_UNKNOWN) {
        *why = w[0];
        return T_UNKNOWN;
    }
    return negate ? (t == T_TRUE ? T_FALSE : T_TRUE) : t;
}

/* One command of a condition list: a test ([ ], [[ ]], test) or true,
 * false and :; anything else is not evaluated. */
static Truth
eval_segment(TpsShellWord **w, guint n, const TpsShellWord **why)
{
    gboolean negate = FALSE;
    while (n > 0 && strcmp(w[0]->text, "!") == 0)
        negate = !negate, w++, n--;
    if (n == 0)
        return T_UNKNOWN;
    Truth t;
    const char *first = w[0]->text, *last = w[n - 1]->text;
    if (strcmp(first, "[") == 0 && strcmp(last, "]") == 0 && n >= 2) {
        t = eval_test(w + 1, n - 2, FALSE, why);
    } else if (strcmp(first, "[[") == 0 && strcmp(last, "]]") == 0 && n >= 2) {
        t = eval_test(w + 1, n - 2, TRUE, why);
    } else if (strcmp(first, "test") == 0) {
        t = eval_test(w + 1, n - 1, FALSE, why);
    } else if (n == 1 && (strcmp(first, "true") == 0 || strcmp(first, ":") == 0)) {
        t = T_TRUE;
    } else if (n == 1 && strcmp(first, "false") == 0) {
        t = T_FALSE;
    } else {
        *why = w[0];
        return T_UNKNOWN;
    }
    if (t == T_UNKNOWN || !negate)
        return t;
    return t == T_TRUE ? T_FALSE : T_TRUE;
}

/* The words of an if's condition: commands joined by && and ||, as the
 * shell runs them, left to right; [[ a && b ]] is read as [[ a ]] && [[ b ]]. */
static Truth
eval_condition(GPtrArray *words, const TpsShellWord **why)
{
    Truth result = T_TRUE;
    const char *op = "&&";
    guint start = 0;
    gboolean in_double = FALSE;
    for (guint i = 0; i <= words->len; i++) {
        const TpsShellWord *w = i < words->len ? g_ptr_array_index(words, i) : NULL;
        if (w != NULL && strcmp(w->text, "[[") == 0)
            in_double = TRUE;
        if (w != NULL && strcmp(w->text, "(") == 0) {
            *why = w; /* grouping: not evaluated */
            return T_UNKNOWN;
        }
        gboolean sep = w == NULL || strcmp(w->text, "&&") == 0 || strcmp(w->text, "||") == 0;
        if (w != NULL && strcmp(w->text, "|") == 0) {
            *why = w;
            return T_UNKNOWN;
        }
        if (!sep)
            continue;
        /* [[ a && b ]]: each side read as a test of its own. */
        g_autoptr(GPtrArray) seg = g_ptr_array_new();
        gboolean closes = FALSE;
        for (guint j = start; j < i; j++)
            g_ptr_array_add(seg, g_ptr_array_index(words, j));
        if (in_double && seg->len > 0) {
            const TpsShellWord *l = g_ptr_array_index(seg, seg->len - 1);
            closes = strcmp(l->text, "]]") == 0;
            static TpsShellWord open = {.text = "[["}, close = {.text = "]]"};
            guint k = 0;
            while (k < seg->len &&
                   strcmp(((const TpsShellWord *)g_ptr_array_index(seg, k))->text, "!") == 0)
                k++;
            if (k == seg->len ||
                strcmp(((const TpsShellWord *)g_ptr_array_index(seg, k))->text, "[[") != 0)
                g_ptr_array_insert(seg, 0, &open);
            if (!closes)
                g_ptr_array_add(seg, &close);
            if (closes)
                in_double = FALSE;
        }
        const TpsShellWord *seg_why = NULL;
        Truth t = eval_segment((TpsShellWord **)seg->pdata, seg->len, &seg_why);
        gboolean is_and = strcmp(op, "&&") == 0;
        /* Kleene's logic: a known side can decide it. */
        Truth before = result;
        if (is_and)
            result = before == T_FALSE || t == T_FALSE ? T_FALSE
                     : before == T_TRUE && t == T_TRUE ? T_TRUE
                                                       : T_UNKNOWN;
        else
            result = before == T_TRUE || t == T_TRUE     ? T_TRUE
                     : before == T_FALSE && t == T_FALSE ? T_FALSE
                                                         : T_UNKNOWN;
        if (t == T_UNKNOWN && *why == NULL)
            *why = seg_why;
        if (w != NULL)
            op = w->text;
        start = i + 1;
    }
    if (result != T_UNKNOWN)
        *why = NULL;
    return result;
}

static Frame *
top_frame(const Lexer *lx)
{
    return lx->frames->len > 0 ? g_ptr_array_index(lx->frames, lx->frames->len - 1) : NULL;
}

/* A branch whose test gave `t` (`why`: the word that left it unknown). */
static void
enter_branch(Lexer *lx, Frame *f, Truth t, const TpsShellWord *why, guint line, guint column)
{
    if (!f->outer_active || f->taken) {
        f->branch = BRANCH_NOT;
    } else if (f->doubt) {
        f->branch = BRANCH_MAY;
    } else if (t == T_UNKNOWN) {
        f->doubt = TRUE;
        f->branch = BRANCH_MAY;
        f->made = g_new0(TpsShellDoubt, 1);
        g_ptr_array_add(lx->doubts, f->made);
        if (why != NULL && why->doubt != NULL && !why->unresolved)
            f->why = g_strdup_printf("'%s' is set in a branch that may not run (%u:%u)", why->text,
                                     why->doubt->line, why->doubt->column);
        else if (why != NULL && why->unresolved)
            f->why = g_strdup_printf("'%s' is not set by the script (tpsim reads the variables "
                                     "the script assigns, not the environment or the script's "
                                     "arguments)",
                                     why->text);
        else
            f->why = g_strdup_printf("'%s' is not a test tpsim evaluates ([ ], [[ ]] and test "
                                     "with = == != -eq -ne -lt -le -gt -ge -z -n; case "
                                     "patterns)",
                                     why != NULL ? why->text : "");
        f->why_line = why != NULL ? why->line : line;
        f->why_column = why != NULL ? why->column : column;
    } else {
        f->branch = t == T_TRUE ? BRANCH_RUNS : BRANCH_NOT;
        f->taken = t == T_TRUE;
    }
    if (f->made != NULL)
        f->made->line = f->why_line, f->made->column = f->why_column;
    lx->active = f->outer_active && f->branch != BRANCH_NOT;
    lx->doubt = f->branch == BRANCH_MAY ? f->made : f->outer_doubt;
}

static void
add_branch(Frame *f, const char *what, guint line, guint column)
{
    g_string_append_printf(f->branches, "%s%s (%u:%u)", f->branches->len ? ", " : "", what, line,
                           column);
}

/* The end of an if or a case: the message of its doubt, complete with
 * its branches. */
static void
close_frame(Lexer *lx)
{
    Frame *f = g_ptr_array_index(lx->frames, lx->frames->len - 1);
    if (f->made != NULL)
        f->made->message =
            g_strdup_printf("tpsim cannot tell which branch of the %s at %u:%u runs: %s; the "
                            "branches: %s",
                            f->is_case ? "case" : "if", f->line, f->column, f->why,
                            f->branches->str);
    lx->active = f->outer_active;
    lx->doubt = f->outer_doubt;
    g_ptr_array_remove_index(lx->frames, lx->frames->len - 1);
}

/* The end of an if's or elif's test: evaluated, and the branch entered. */
static void
end_condition(Lexer *lx)
{
    Frame *f = g_ptr_array_index(lx->frames, lx->frames->len - 1);
    const TpsShellWord *why = NULL;
    Truth t = T_UNKNOWN;
    if (f->outer_active && !f->taken && !f->doubt)
        t = eval_condition(lx->current, &why);
    enter_branch(lx, f, t, why, lx->cond_line, lx->cond_column);
    g_ptr_array_set_size(lx->current, 0);
    lx->cond = FALSE;
}

static void
end_command(Lexer *lx)
{
    if (lx->cond) {
        end_condition(lx);
        return;
    }
    if (!lx->active) {
        g_ptr_array_set_size(lx->current, 0); /* a branch that does not run */
        lx->pending = NULL;
        return;
    }
    const TpsShellDoubt *doubt = lx->doubt != NULL ? lx->doubt : lx->pending;
    for (guint i = 0; doubt != NULL && i < lx->current->len; i++) {
        TpsShellWord *w = g_ptr_array_index(lx->current, i);
        if (w->doubt == NULL)
            w->doubt = doubt;
    }
    lx->pending = NULL;
    if (lx->current->len > 0) {
        g_ptr_array_add(lx->commands, lx->current);
        lx->current = g_ptr_array_new_with_free_func(tps_shell_word_free);
    }
}

/* The reserved word at the reading position (if, then, elif, else, fi,
 * case, esac) or NULL; `n` its length. */
static const char *
keyword_at(const Lexer *lx, gsize *n)
{
    static const char *const keywords[] = {"if", "then", "elif", "else", "fi", "case", "esac",
                                           NULL};
    for (guint i = 0; keywords[i] != NULL; i++) {
        gsize k = strlen(keywords[i]);
        if (lx->pos + k <= lx->len && strncmp(lx->s + lx->pos, keywords[i], k) == 0 &&
            ends_word(peek(lx, k))) {
            *n = k;
            return keywords[i];
        }
    }
    return NULL;
}

static void
skip_chars(Lexer *lx, gsize n)
{
    for (gsize i = 0; i < n; i++)
        advance(lx);
}

/* After case WORD in, or after ;;: the patterns of the next branch, or
 * esac. */
static gboolean
lex_case_patterns(Lexer *lx, GError **error)
{
    Frame *f = top_frame(lx);
    skip_blanks(lx, TRUE);
    gsize n;
    const char *kw = keyword_at(lx, &n);
    if (kw != NULL && strcmp(kw, "esac") == 0) {
        skip_chars(lx, n);
        close_frame(lx);
        return TRUE;
    }
    guint line = lx->line, column = lx->column;
    if (peek(lx, 0) == '(')
        advance(lx);
    g_autoptr(GPtrArray) patterns = g_ptr_array_new_with_free_func(tps_shell_word_free);
    for (;;) {
        skip_blanks(lx, FALSE);
        guint before = patterns->len;
        if (!lex_word(lx, patterns, error))
            return FALSE;
        if (patterns->len == before)
            return lex_error(lx, lx->line, lx->column, error,
                             "case at %u:%u: a pattern expected (or esac)", f->line, f->column);
        skip_blanks(lx, FALSE);
        if (peek(lx, 0) == '|') {
            advance(lx);
            continue;
        }
        if (peek(lx, 0) == ')') {
            advance(lx);
            break;
        }
        return lex_error(lx, line, column, error, "case pattern without its )");
    }
    GString *what = g_string_new(NULL);
    Truth t = T_FALSE;
    const TpsShellWord *why = NULL;
    for (guint i = 0; i < patterns->len; i++) {
        const TpsShellWord *p = g_ptr_array_index(patterns, i);
        g_string_append_printf(what, "%s%s", i ? "|" : "", p->text);
        if (t == T_TRUE)
            continue;
        if (f->word == NULL || f->word->unresolved) {
            why = f->word, t = T_UNKNOWN;
        } else if (p->unresolved) {
            why = p, t = T_UNKNOWN;
        } else if (t == T_FALSE && glob_match(p->text, f->word->text)) {
            t = T_TRUE;
        }
    }
    g_string_append_c(what, ')');
    add_branch(f, what->str, line, column);
    g_string_free(what, TRUE);
    if (f->outer_active && !f->taken && !f->doubt)
        enter_branch(lx, f, t, why, line, column);
    else
        enter_branch(lx, f, T_UNKNOWN, why, line, column);
    return TRUE;
}

/* A reserved word at the start of a command. */
static gboolean
lex_keyword(Lexer *lx, const char *kw, gsize n, GError **error)
{
    guint line = lx->line, column = lx->column;
    Frame *f = top_frame(lx);
    skip_chars(lx, n);
    if (strcmp(kw, "then") == 0)
        return TRUE;
    if (strcmp(kw, "if") == 0 || strcmp(kw, "case") == 0) {
        Frame *nf = g_new0(Frame, 1);
        nf->is_case = kw[0] == 'c';
        nf->outer_active = lx->active;
        nf->outer_doubt = lx->doubt;
        nf->branch = BRANCH_NOT;
        nf->line = line, nf->column = column;
        nf->branches = g_string_new(NULL);
        g_ptr_array_add(lx->frames, nf);
        if (!nf->is_case) {
            add_branch(nf, "if", line, column);
            lx->cond = TRUE;
            lx->cond_line = line, lx->cond_column = column;
            lx->active = FALSE;
            return TRUE;
        }
        lx->active = FALSE;
        skip_blanks(lx, FALSE);
        g_autoptr(GPtrArray) word = g_ptr_array_new_with_free_func(tps_shell_word_free);
        if (!lex_word(lx, word, error))
            return FALSE;
        if (word->len != 1)
            return lex_error(lx, line, column, error, "case without one word to match");
        nf->word = g_ptr_array_steal_index(word, 0);
        skip_blanks(lx, TRUE);
        if (!(lx->pos + 2 <= lx->len && strncmp(lx->s + lx->pos, "in", 2) == 0 &&
              ends_word(peek(lx, 2))))
            return lex_error(lx, line, column, error, "case without its in");
        skip_chars(lx, 2);
        return lex_case_patterns(lx, error);
    }
    if (strcmp(kw, "esac") == 0) {
        if (f == NULL || !f->is_case)
            return lex_error(lx, line, column, error, "esac without its case");
        close_frame(lx);
        return TRUE;
    }
    if (f == NULL || f->is_case)
        return lex_error(lx, line, column, error, "%s without its if", kw);
    if (strcmp(kw, "elif") == 0) {
        add_branch(f, "elif", line, column);
        lx->cond = TRUE;
        lx->cond_line = line, lx->cond_column = column;
        lx->active = FALSE;
        return TRUE;
    }
    if (strcmp(kw, "else") == 0) {
        add_branch(f, "else", line, column);
        enter_branch(lx, f, f->outer_active && !f->taken && !f->doubt ? T_TRUE : T_UNKNOWN,
                     NULL, line, column);
        return TRUE;
    }
    close_frame(lx); /* fi */
    return TRUE;
}

/* NAME=(words...), at the parenthesis: the words into `var`. */
static gboolean
lex_array_value(Lexer *lx, const char *name, Var *var, GError **error)
{
    guint line = lx->line, column = lx->column;
    advance(lx);
    var->array = TRUE;
    for (;;) {
        skip_blanks(lx, TRUE);
        int c = peek(lx, 0);
        if (c == ')') {
            advance(lx);
            return TRUE;
        }
        if (c == -1 || c == ';' || c == '&' || c == '|' || c == '(' || c == '<' || c == '>')
            return lex_error(lx, line, column, error,
                             "array %s=( without its closing ) (or with '%c' inside)", name,
                             c == -1 ? ' ' : c);
        if (!lex_word(lx, var->words, error))
            return FALSE;
    }
}

/* NAME=value: one word, never split (`+=` onto a plain value extends its
 * one word, and `*old_len` becomes 0: no word is kept as it was). */
static gboolean
lex_scalar_value(Lexer *lx, gboolean append, Var *var, guint *old_len, GError **error)
{
    g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(tps_shell_word_free);
    guint line = lx->line, column = lx->column;
    if (!lex_word(lx, parts, error))
        return FALSE;
    g_autoptr(GString) joined = g_string_new(NULL);
    gboolean unresolved = FALSE;
    const TpsShellDoubt *doubt = NULL;
    for (guint i = 0; i < parts->len; i++) {
        const TpsShellWord *w = g_ptr_array_index(parts, i);
        if (i > 0)
            g_string_append_c(joined, ' ');
        g_string_append(joined, w->text);
        unresolved = unresolved || w->unresolved;
        if (w->doubt != NULL)
            doubt = w->doubt;
        if (i == 0)
            line = w->line, column = w->column;
    }
    if (append && !var->array && var->words->len == 1) {
        TpsShellWord *w = g_ptr_array_index(var->words, 0);
        char *text = g_strconcat(w->text, joined->str, NULL);
        g_free(w->text);
        w->text = text;
        w->unresolved = w->unresolved || unresolved;
        if (doubt != NULL)
            w->doubt = doubt;
        *old_len = 0; /* the one word changed */
    } else {
        TpsShellWord *w = tps_shell_word_new(joined->str, line, column, unresolved);
        w->doubt = doubt;
        g_ptr_array_add(var->words, w);
    }
    return TRUE;
}

/* A branch that may run (lx->doubt): what it sets, from word `from` on, is
 * marked with it. */
static void
mark_doubtful(const Lexer *lx, Var *var, guint from)
{
    var->doubt = lx->doubt;
    for (guint i = from; i < var->words->len; i++) {
        TpsShellWord *w = g_ptr_array_index(var->words, i);
        if (w->doubt == NULL)
            w->doubt = lx->doubt;
    }
}

static gboolean
lex_assignment(Lexer *lx, gsize name_len, gboolean append, GError **error)
{
    g_autofree char *name = g_strndup(lx->s + lx->pos, name_len);
    for (gsize i = 0; i < name_len + (append ? 2 : 1); i++)
        advance(lx);

    Var *var = g_new0(Var, 1);
    var->words = g_ptr_array_new_with_free_func(tps_shell_word_free);
    const Var *old = lookup(lx, name);
    guint old_len = 0;
    if (append && old != NULL) {
        old_len = old->words->len;
        for (guint i = 0; i < old->words->len; i++)
            g_ptr_array_add(var->words, word_copy(g_ptr_array_index(old->words, i)));
        var->array = old->array;
    }
    const gboolean ok = peek(lx, 0) == '('
                            ? lex_array_value(lx, name, var, error)
                            : lex_scalar_value(lx, append, var, &old_len, error);
    if (!ok || !lx->active) {
        var_free(var); /* an error, or a branch that does not run */
        return ok;
    }
    if (lx->doubt != NULL)
        mark_doubtful(lx, var, old_len);
    g_hash_table_replace(lx->vars, g_steal_pointer(&name), var);
    return TRUE;
}

/* A comment at `c`: at the start of a command, or after a blank. */
static gboolean
at_comment(const Lexer *lx, int c, gboolean command_start)
{
    if (c != '#')
        return FALSE;
    if (lx->current->len == 0 && command_start)
        return TRUE;
    return lx->pos == 0 || strchr(" \t", lx->s[lx->pos - 1]) != NULL;
}

static void
skip_to_line_end(Lexer *lx)
{
    while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
        advance(lx);
}

/* Inside an if's test, at `c` (&, |, ( or )): && and || join its
 * commands, kept as words of the test. */
static void
lex_test_operator(Lexer *lx, int c)
{
    guint line = lx->line, column = lx->column;
    char op[3] = {(char)c, '\0', '\0'};
    advance(lx);
    if ((c == '&' || c == '|') && peek(lx, 0) == c) {
        op[1] = (char)c;
        advance(lx);
        skip_blanks(lx, TRUE);
    }
    g_ptr_array_add(lx->current, tps_shell_word_new(op, line, column, FALSE));
}

/* Whether `c` ends a case branch (;; inside a case, outside a test). */
static gboolean
at_case_end(Lexer *lx, int c)
{
    return c == ';' && peek(lx, 1) == ';' && top_frame(lx) != NULL && top_frame(lx)->is_case &&
           !lx->cond;
}

/* The end of a case branch, at ";;" (or ";;&"): the next patterns. */
static gboolean
lex_case_end(Lexer *lx, GError **error)
{
    skip_chars(lx, 2);
    if (peek(lx, 0) == '&')
        advance(lx);
    end_command(lx);
    return lex_case_patterns(lx, error);
}

/* A redirection and its target, at < or >: no arguments. */
static gboolean
lex_redirection(Lexer *lx, GError **error)
{
    while (peek(lx, 0) == '<' || peek(lx, 0) == '>' || peek(lx, 0) == '&')
        advance(lx);
    skip_blanks(lx, FALSE);
    g_autoptr(GPtrArray) target = g_ptr_array_new_with_free_func(tps_shell_word_free);
    return lex_word(lx, target, error);
}

/* A word of the current command: an argument, unless it is a
 * redirection's descriptor (2>&1) or a word after which an assignment may
 * still come (export, then, ...); `*command_start` ends with an argument. */
static gboolean
lex_command_word(Lexer *lx, gboolean *command_start, GError **error)
{
    guint before = lx->current->len;
    if (!lex_word(lx, lx->current, error))
        return FALSE;
    if (lx->current->len == before + 1 && (peek(lx, 0) == '<' || peek(lx, 0) == '>')) {
        const TpsShellWord *w = g_ptr_array_index(lx->current, before);
        if (w->text[0] != '\0' && strspn(w->text, "0123456789") == strlen(w->text)) {
            g_ptr_array_remove_index(lx->current, before);
            return TRUE;
        }
    }
    if (lx->current->len == before + 1) {
        static const char *const keep[] = {"export", "declare", "local", "readonly", "then",
                                           "else",   "do",      "{",     "!",        NULL};
        const TpsShellWord *w = g_ptr_array_index(lx->current, before);
        if (*command_start && !lx->cond && g_strv_contains(keep, w->text)) {
            g_ptr_array_remove_index(lx->current, before);
            return TRUE;
        }
    }
    if (lx->current->len > before)
        *command_start = FALSE;
    return TRUE;
}

/* The script's end: an if or case still open is an error at it. */
static gboolean
check_frames_closed(Lexer *lx, GError **error)
{
    if (lx->frames->len == 0)
        return TRUE;
    const Frame *f = g_ptr_array_index(lx->frames, lx->frames->len - 1);
    return lex_error(lx, f->line, f->column, error, "%s without its %s",
                     f->is_case ? "case" : "if", f->is_case ? "esac" : "fi");
}

/* One step of the script at `c`: a comment, an operator of a test, a
 * case branch's end, a command's end, a keyword, a redirection, an
 * assignment or a word. */
static gboolean
lex_step(Lexer *lx, int c, gboolean *command_start, GError **error)
{
    if (at_comment(lx, c, *command_start)) {
        skip_to_line_end(lx);
        return TRUE;
    }
    if (lx->cond && (c == '&' || c == '|' || c == '(' || c == ')')) {
        lex_test_operator(lx, c);
        *command_start = TRUE;
        return TRUE;
    }
    if (at_case_end(lx, c)) {
        *command_start = TRUE;
        return lex_case_end(lx, error);
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
        advance(lx);
        end_command(lx);
        *command_start = TRUE;
        return TRUE;
    }
    gsize kw_len;
    const char *kw =
        *command_start && lx->current->len == 0 && !lx->cond ? keyword_at(lx, &kw_len) : NULL;
    if (kw != NULL)
        return lex_keyword(lx, kw, kw_len, error);
    if (c == '<' || c == '>')
        return lex_redirection(lx, error);
    gboolean append;
    gsize name_len = *command_start ? assignment_at(lx, &append) : 0;
    if (name_len > 0)
        return lex_assignment(lx, name_len, append, error);
    return lex_command_word(lx, command_start, error);
}

static gboolean
lex_script(Lexer *lx, GError **error)
{
    gboolean command_start = TRUE;
    for (;;) {
        skip_blanks(lx, FALSE);
        int c = peek(lx, 0);
        if (c == -1)
            break;
        if (!lex_step(lx, c, &command_start, error))
            return FALSE;
    }
    end_command(lx);
    return check_frames_closed(lx, error);
}

/* ---- the script ---- */

struct _TpsShellScript {
    GHashTable *vars;    /* name -> Var */
    GPtrArray *commands; /* GPtrArray of TpsShellWord */
    GPtrArray *doubts;   /* TpsShellDoubt */
};

TpsShellScript *
tps_shell_script_read(const char *file, const char *text, gsize len, guint line, guint column,
                      GError **error)
{
    g_return_val_if_fail(file != NULL, NULL);
    g_return_val_if_fail(text != NULL || len == 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    Lexer lx = {
        .file = file,
        .s = text,
        .len = len,
        .line = line,
        .column = column,
        .vars = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, var_free),
        .commands = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref),
        .current = g_ptr_array_new_with_free_func(tps_shell_word_free),
        .frames = g_ptr_array_new_with_free_func(frame_free),
        .active = TRUE,
        .doubts = g_ptr_array_new_with_free_func(doubt_free),
    };
    gboolean ok = lex_script(&lx, error);
    g_ptr_array_unref(lx.current);
    g_ptr_array_unref(lx.frames);
    if (!ok) {
        g_hash_table_unref(lx.vars);
        g_ptr_array_unref(lx.commands);
        g_ptr_array_unref(lx.doubts);
        return NULL;
    }
    TpsShellScript *script = g_new0(TpsShellScript, 1);
    script->vars = lx.vars;
    script->commands = lx.commands;
    script->doubts = lx.doubts;
    return script;
}

void
tps_shell_script_free(TpsShellScript *script)
{
    if (script == NULL)
        return;
    g_hash_table_unref(script->vars);
    g_ptr_array_unref(script->commands);
    g_ptr_array_unref(script->doubts);
    g_free(script);
}

const GPtrArray *
tps_shell_script_commands(const TpsShellScript *script)
{
    return script->commands;
}

const TpsShellWord *
tps_shell_script_value(const TpsShellScript *script, const char *name)
{
    const Var *v = g_hash_table_lookup(script->vars, name);
    if (v == NULL || v->words->len == 0)
        return NULL;
    return g_ptr_array_index(v->words, 0);
}
