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

# Sets TREE to about 160,000 lines of JavaScript (plus their TypeScript declarations) from
# npm, built once into $TMPDIR/keyplan-bench-js: webpack 5.97.1, ioredis 5.4.1,
# @redis/client 1.6.0, bull 4.16.5 and express 4.21.2 as published (needs npm, ~6 MB).
bench_js_tree() {
  TREE="${TMPDIR:-/tmp}/keyplan-bench-js"
  if [ ! -f "$TREE/.complete" ]; then
    rm -rf "$TREE" && mkdir -p "$TREE/pack"
    (cd "$TREE/pack" && npm pack --silent webpack@5.97.1 ioredis@5.4.1 @redis/client@1.6.0 \
      bull@4.16.5 express@4.21.2 > /dev/null)
    for t in "$TREE"/pack/*.tgz; do
      d="$TREE/src/$(basename "$t" .tgz)"
      mkdir -p "$d" && tar xzf "$t" -C "$d"
    done
    rm -rf "$TREE/pack"
    touch "$TREE/.complete"
  fi
  TREE="$TREE/src"
}

# Sets TREE to about 250,000 lines of Python (and Django's admin JavaScript) from PyPI, built
# once into $TMPDIR/keyplan-bench-py: Django 5.1.4, redis-py 5.2.1, Celery 5.4.0 and
# Kombu 5.4.2 (needs pip, ~13 MB).
bench_py_tree() {
  TREE="${TMPDIR:-/tmp}/keyplan-bench-py"
  if [ ! -f "$TREE/.complete" ]; then
    rm -rf "$TREE" && mkdir -p "$TREE/wheels"
    python3 -m pip download -q --no-deps -d "$TREE/wheels" 'django==5.1.4' 'redis==5.2.1' \
      'celery==5.4.0' 'kombu==5.4.2'
    for w in "$TREE"/wheels/*.whl; do
      d="$TREE/src/$(basename "$w" .whl)"
      mkdir -p "$d" && python3 -m zipfile -e "$w" "$d"
    done
    rm -rf "$TREE/wheels"
    touch "$TREE/.complete"
  fi
  TREE="$TREE/src"
}
