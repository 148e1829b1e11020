/* tpsim calibrate: placeholder until calibration lands. */
#include "cli/commands.h"
#include "core/error.h"

int
tps_cmd_calibrate(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE, "calibrate: not available in this build yet");
    return tps_cli_fail(error);
}
