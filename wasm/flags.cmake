# Compiler flags for everything built under Emscripten (the core and the bindings): size first
# (the page budget), -Oz with link-time optimisation; the core never throws (errors are data), so
# exceptions are compiled out. Included by the top-level CMakeLists before the core is added.
add_compile_options(-Oz -flto -fno-exceptions)
