# Sourced by code.sh and compare.sh: sets TREE to a tree of real code from PyPI, built once
# into $TMPDIR/keyplan-bench-code: the wheels of sympy 1.13.3, Django 5.1.4, botocore 1.35.0
# and networkx 3.4.2 (about 1.1M lines of Python and JavaScript; needs pip, ~33 MB download).
bench_tree() {
  TREE="${TMPDIR:-/tmp}/keyplan-bench-code"
  if [ ! -f "$TREE/.complete" ]; then
    rm -rf "$TREE" && mkdir -p "$TREE/wheels"
    python3 -m pip download -q --no-deps -d "$TREE/wheels" 'sympy==1.13.3' 'django==5.1.4' \
      'botocore==1.35.0' 'networkx==3.4.2'
    for w in "$TREE"/wheels/*.whl; do
      d="$TREE/src/$(basename "$w" .whl)"
      mkdir -p "$d" && python3 -m zipfile -e "$w" "$d"
    done
    rm -rf "$TREE/wheels"
    touch "$TREE/.complete"
  fi
  TREE="$TREE/src"
}
