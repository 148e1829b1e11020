/* Shell scripts read into commands of words, as the shell would read the
 * parts that matter to a launch script (docs/megatron-args.md): line
 * continuations, comments, quotes, variables assigned earlier in the
 * script (NAME=value, export, ${NAME:-default}, $((arithmetic))) and
 * arrays (NAME=( ... ), NAME+=( ... ), ${NAME[@]}), as in Megatron's
 * examples/ scripts. if/elif/else/fi and case/esac are evaluated where
 * their tests are ([ ], [[ ]], test: = == != -eq -ne -lt -le -gt -ge -z -n
 * of values the script sets, joined by && and ||; case patterns with
 * globs): only the branch that runs is read. A test that cannot be
 * evaluated leaves its branches' words (their assignments, their
 * commands) marked with a TpsShellDoubt, for the caller to refuse where
 * such a word matters. Loops (for, while) are not evaluated: assignments inside
 * count as if they ran. Redirections and their targets are not
 * arguments; ;, &, |, ( and ) end a command. An unterminated quote,
 * backquote, $( or ${ is an error at where it opens.
 *
 * Every word keeps its position: where it starts in the script, or, where
 * a word is one variable alone, the position of the variable's value, so
 * that a message about the word points at TP_SIZE=8 rather than at
 * $TP_SIZE. What the script does not set ($1, $(cmd), `cmd`, an unset
 * $NAME) is kept as written and marked unresolved.
 *
 * Every problem is TPS_ERROR_INPUT "file:line:column: message".
 */
#pragma once

#include <glib.h>

/* Why a word may not be what the script runs: it comes from a branch of
 * an if or a case whose test tpsim cannot evaluate. `message` (without the
 * file) is placed at `line`:`column`, the test's operand. Owned by the
 * script. */
typedef struct {
    char *message;
    guint line, column;
} TpsShellDoubt;

/* A word after quote removal and expansion. */
typedef struct {
    char *text;
    guint line, column;
    gboolean unresolved; /* holds an expansion the script does not set ($1, $(cmd), $UNSET) */
    const TpsShellDoubt *doubt; /* set in a branch that may not run, or NULL */
} TpsShellWord;

TpsShellWord *tps_shell_word_new(const char *text, guint line, guint column, gboolean unresolved);

/* Frees a TpsShellWord (a GDestroyNotify); NULL is ignored. */
void tps_shell_word_free(gpointer word);

/* A script read: its commands and the variables it assigned. */
typedef struct _TpsShellScript TpsShellScript;

/* Read `len` bytes of `text` (without NUL bytes) as a script named `file`
 * in messages, positions starting at `line`:`column`. NULL with the error
 * set. */
TpsShellScript *tps_shell_script_read(const char *file, const char *text, gsize len, guint line,
                                      guint column, GError **error);

void tps_shell_script_free(TpsShellScript *script);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsShellScript, tps_shell_script_free)

/* The commands in script order, each a GPtrArray of TpsShellWord (at
 * least one word each). Owned by the script. */
const GPtrArray *tps_shell_script_commands(const TpsShellScript *script);

/* The value of variable `name` when the script ends (an array's first
 * element), or NULL when the script does not set it or sets it to an empty
 * array. Owned by the script. */
const TpsShellWord *tps_shell_script_value(const TpsShellScript *script, const char *name);
