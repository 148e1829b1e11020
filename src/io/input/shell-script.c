/* Shell scripts read into commands of words (see shell-script.h).
 *
 * A lexer walks the text once, character by character, keeping the line
 * and column: words are built with quotes removed and expansions
 * substituted from the variables assigned so far, assignments at the start
 * of a command go into the variables instead of the command, and the
 * separators end commands.
 */
#include "io/input/shell-script.h"

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
    return tps_shell_word_new(w->text, w->line, w->column, w->unresolved);
}

/* A variable: one word, or the elements of an array. */
typedef struct {
    GPtrArray *words;
    gboolean array;
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

typedef struct {
    const char *file;
    const char *s;
    gsize len, pos;
    guint line, column;
    GHashTable *vars;    /* name -> Var */
    GPtrArray *commands; /* GPtrArray of TpsShellWord */
    GPtrArray *current;  /* the command being read */
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
    g_ptr_array_add(out, w);
    g_string_truncate(b->text, 0);
    b->started = b->unresolved = b->mixed = FALSE;
    b->sole = NULL;
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
arith_eval(const Lexer *lx, const char *expr, gint64 *out)
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
    if (arith_eval(lx, expr, &v)) {
        g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT, v);
        building_start(b, lx);
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
static void
lex_backquoted(Lexer *lx, Building *b)
{
    advance(lx);
    gboolean closed;
    g_free(read_balanced(lx, '\0', '`', &closed));
    append_unresolved(b, lx, "`...`");
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
            lex_backquoted(lx, b);
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
            lex_backquoted(lx, &b);
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

static gboolean
lex_assignment(Lexer *lx, gsize name_len, gboolean append, GError **error)
{
    g_autofree char *name = g_strndup(lx->s + lx->pos, name_len);
    for (gsize i = 0; i < name_len + (append ? 2 : 1); i++)
        advance(lx);

    Var *var = g_new0(Var, 1);
    var->words = g_ptr_array_new_with_free_func(tps_shell_word_free);
    const Var *old = lookup(lx, name);
    if (append && old != NULL) {
        for (guint i = 0; i < old->words->len; i++)
            g_ptr_array_add(var->words, word_copy(g_ptr_array_index(old->words, i)));
        var->array = old->array;
    }
    if (peek(lx, 0) == '(') {
        guint line = lx->line, column = lx->column;
        advance(lx);
        var->array = TRUE;
        for (;;) {
            skip_blanks(lx, TRUE);
            int c = peek(lx, 0);
            if (c == ')') {
                advance(lx);
                break;
            }
            if (c == -1 || c == ';' || c == '&' || c == '|' || c == '(' || c == '<' || c == '>') {
                var_free(var);
                return lex_error(lx, line, column, error,
                                 "array %s=( without its closing ) (or with '%c' inside)", name,
                                 c == -1 ? ' ' : c);
            }
            if (!lex_word(lx, var->words, error)) {
                var_free(var);
                return FALSE;
            }
        }
    } else {
        /* A value is not split into words. */
        g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(tps_shell_word_free);
        guint line = lx->line, column = lx->column;
        if (!lex_word(lx, parts, error)) {
            var_free(var);
            return FALSE;
        }
        GString *joined = g_string_new(NULL);
        gboolean unresolved = FALSE;
        for (guint i = 0; i < parts->len; i++) {
            const TpsShellWord *w = g_ptr_array_index(parts, i);
            if (i > 0)
                g_string_append_c(joined, ' ');
            g_string_append(joined, w->text);
            unresolved = unresolved || w->unresolved;
            if (i == 0)
                line = w->line, column = w->column;
        }
        if (append && !var->array && var->words->len == 1) {
            TpsShellWord *w = g_ptr_array_index(var->words, 0);
            char *text = g_strconcat(w->text, joined->str, NULL);
            g_free(w->text);
            w->text = text;
            w->unresolved = w->unresolved || unresolved;
        } else {
            g_ptr_array_add(var->words, tps_shell_word_new(joined->str, line, column, unresolved));
        }
        g_string_free(joined, TRUE);
    }
    g_hash_table_replace(lx->vars, g_steal_pointer(&name), var);
    return TRUE;
}

static void
end_command(Lexer *lx)
{
    if (lx->current->len > 0) {
        g_ptr_array_add(lx->commands, lx->current);
        lx->current = g_ptr_array_new_with_free_func(tps_shell_word_free);
    }
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
        if (c == '#' && lx->current->len == 0 && command_start) {
            while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
                advance(lx);
            continue;
        }
        if (c == '#' && (lx->pos == 0 || strchr(" \t", lx->s[lx->pos - 1]) != NULL)) {
            while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
                advance(lx);
            continue;
        }
        if (c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
            advance(lx);
            end_command(lx);
            command_start = TRUE;
            continue;
        }
        if (c == '<' || c == '>') {
            /* A redirection and its target: no arguments. */
            while (peek(lx, 0) == '<' || peek(lx, 0) == '>' || peek(lx, 0) == '&')
                advance(lx);
            skip_blanks(lx, FALSE);
            g_autoptr(GPtrArray) target = g_ptr_array_new_with_free_func(tps_shell_word_free);
            if (!lex_word(lx, target, error))
                return FALSE;
            continue;
        }
        gboolean append;
        gsize name_len = command_start ? assignment_at(lx, &append) : 0;
        if (name_len > 0) {
            if (!lex_assignment(lx, name_len, append, error))
                return FALSE;
            continue;
        }
        guint before = lx->current->len;
        if (!lex_word(lx, lx->current, error))
            return FALSE;
        if (lx->current->len == before + 1 && (peek(lx, 0) == '<' || peek(lx, 0) == '>')) {
            /* The descriptor of a redirection (2>&1): not an argument. */
            const TpsShellWord *w = g_ptr_array_index(lx->current, before);
            if (w->text[0] != '\0' && strspn(w->text, "0123456789") == strlen(w->text)) {
                g_ptr_array_remove_index(lx->current, before);
                continue;
            }
        }
        if (lx->current->len == before + 1) {
            /* Words after which an assignment may still come. */
            static const char *const keep[] = {"export", "declare", "local", "readonly", "then",
                                               "else",   "do",      "{",     "!",        NULL};
            const TpsShellWord *w = g_ptr_array_index(lx->current, before);
            if (command_start && g_strv_contains(keep, w->text)) {
                g_ptr_array_remove_index(lx->current, before);
                continue;
            }
        }
        if (lx->current->len > before)
            command_start = FALSE;
    }
    end_command(lx);
    return TRUE;
}

/* ---- the script ---- */

struct _TpsShellScript {
    GHashTable *vars;    /* name -> Var */
    GPtrArray *commands; /* GPtrArray of TpsShellWord */
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
    };
    gboolean ok = lex_script(&lx, error);
    g_ptr_array_unref(lx.current);
    if (!ok) {
        g_hash_table_unref(lx.vars);
        g_ptr_array_unref(lx.commands);
        return NULL;
    }
    TpsShellScript *script = g_new0(TpsShellScript, 1);
    script->vars = lx.vars;
    script->commands = lx.commands;
    return script;
}

void
tps_shell_script_free(TpsShellScript *script)
{
    if (script == NULL)
        return;
    g_hash_table_unref(script->vars);
    g_ptr_array_unref(script->commands);
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
