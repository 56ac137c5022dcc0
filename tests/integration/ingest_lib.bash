# ingest_lib.bash: sourced by tests/integration/ingest_*.sh (not a test itself: no main).
# build_recv: compiles the ingest_recv harness against $BUILD/libgoodput.a into $RECV,
# with the sanitizers when the library was built with them.
build_recv() {
  RECV="$BUILD/tests/ingest_recv"
  mkdir -p "$BUILD/tests"
  local cc=${CC:-cc} san=
  if nm "$BUILD/libgoodput.a" 2>/dev/null | grep -q '__asan_'; then
    cc=clang san="-fsanitize=address,undefined"
  fi
  if [ ! -x "$RECV" ] || [ "$RECV" -ot "$BUILD/libgoodput.a" ] ||
     [ "$RECV" -ot tests/integration/ingest_recv.c ]; then
    # Built beside it and renamed: the ingest tests run in parallel, and writing over the
    # file while another test executes it fails that test ("Text file busy").
    $cc -std=c11 -O1 -g -D_GNU_SOURCE -Isrc -Iinclude $san tests/integration/ingest_recv.c \
      "$BUILD/libgoodput.a" -o "$RECV.$$" && mv -f "$RECV.$$" "$RECV" || { rm -f "$RECV.$$"; return 1; }
  fi
  case $RECV in /*) ;; *) RECV=$PWD/$RECV ;; esac
  export INGEST_RECV="$RECV"
}
