// The translation unit that compiles a precompiled header of cmake/Precompiled.cmake.
