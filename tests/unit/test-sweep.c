#include "test-util.h"
int main(void) { Suite *s = suite_create("sweep"); return tps_test_run(s); }
