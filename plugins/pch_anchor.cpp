// The source of the bundled plugins' precompiled header target (plugins/CMakeLists.txt).
