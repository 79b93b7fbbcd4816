# libember (client/ember.h): the API against fake brokers in the test process and a private
# redis-server (client_lib), and the installed library + pkg-config file compiling the example
# (client_example_install). Only when the library is being built (client/ember_*.c present).
if(TARGET ember_client)
    ember_add_test(NAME client_lib SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_client.c
                   LIBS ember_client ember_common PkgConfig::ZMQ Threads::Threads TIMEOUT 120)
    add_dependencies(client_lib ember) # s_test_cli runs the `ember` tool in pool mode

    # Installs the build tree into a fresh prefix, then builds client/examples/embed_example.c
    # with `pkg-config --cflags --libs ember` only (cc from $CC), runs it with --version and with
    # no argument (usage, exit 2), and compiles ember.h as C++ when a C++ compiler is there.
    # The .pc file finds its prefix relative to itself, so plain pkg-config works in the temp
    # prefix (the build was configured for another one).
    set(_sanflags "")
    if(EMBER_SANITIZE)
        set(_sanflags "-fsanitize=address,undefined")
    endif()
    set(_script [=[
set -eu
build=$1
examples=$2
prefix=$3
san=$4
fail() {
    echo "client_example_install: $*"
    exit 1
}
rm -rf "$prefix"
mkdir -p "$prefix"
cmake --install "$build" --prefix "$prefix" > "$prefix.log"
pc=$(find "$prefix" -name ember.pc | head -n 1)
test -n "$pc" || fail "ember.pc not installed"
test -f "$prefix/include/ember.h" || fail "ember.h not installed"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
pcv="pkg-config"
# the prefix pkg-config reports is the temporary one, found from where ember.pc lies
test "$(cd "$($pcv --variable=prefix ember)" && pwd -P)" = "$(cd "$prefix" && pwd -P)" ||
    fail "prefix $($pcv --variable=prefix ember) is not $prefix"
flags=$($pcv --cflags --libs ember)
echo "pkg-config --cflags --libs ember: $flags"
${CC:-cc} -std=c11 -Wall -Wextra -Werror $san -o "$prefix/embed_example" \
    "$examples/embed_example.c" $flags
LD_LIBRARY_PATH=$($pcv --variable=libdir ember)
ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0
export LD_LIBRARY_PATH ASAN_OPTIONS
out=$("$prefix/embed_example" --version)
echo "$out"
echo "$out" | grep -q "libember 0[.]" || fail "unexpected --version output"
rc=0
"$prefix/embed_example" > /dev/null 2>&1 || rc=$?
test "$rc" -eq 2 || fail "usage exit code $rc, expected 2"
if command -v "${CXX:-c++}" > /dev/null 2>&1
then
    printf '#include <ember.h>\nint main() { return ember_version() ? 0 : 1\073 }\n' > "$prefix/t.cpp"
    "${CXX:-c++}" -Wall -Werror $san "$prefix/t.cpp" -o "$prefix/tcpp" $flags
    "$prefix/tcpp"
    echo "C++ include ok"
fi
echo "install + pkg-config ok"
]=])
    add_test(NAME client_example_install
             COMMAND sh -c "${_script}" client_example_install ${CMAKE_BINARY_DIR}
                     ${CMAKE_SOURCE_DIR}/client/examples ${EMBER_TEST_DATA_DIR}/client_install
                     "${_sanflags}")
    set_tests_properties(client_example_install PROPERTIES TIMEOUT 120 LABELS cpu)
endif()
