// A shared library that is not a Skein plugin.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer() { return 42; }
