#!/usr/bin/env python3
"""Build a GOPATH overlay holding a recording copy of redigo's redis package.

    python3 tests/corpus/go/overlay.py OVERLAY [IMPORT_PATH ...]

For each import path (default: github.com/gomodule/redigo/redis and
github.com/garyburd/redigo/redis) found under /usr/share/gocode/src (Debian's Go sources), its
repository is copied to OVERLAY/src (without tests), four methods of its conn are renamed (writeCommand,
Flush, Do and, where it exists, DoWithTimeout, each to kp<Name>) and keyplan_record.go (with
keyplan_record_timeout.go where DoWithTimeout exists) is added: methods of the old names that log
and call the renamed ones. Nothing of the copy is kept in the repository; build with
GO111MODULE=off GOPATH=OVERLAY:<package's GOPATH>:/usr/share/gocode.
"""
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOCODE = "/usr/share/gocode/src"
DEFAULT = ["github.com/gomodule/redigo/redis", "github.com/garyburd/redigo/redis"]


def build(overlay, paths):
    done = []
    for imp in paths:
        src = os.path.join(GOCODE, imp)
        if not os.path.isdir(src):
            continue
        # the whole repository (its redis package imports the repository's internal packages)
        top = os.path.dirname(imp)
        if os.path.isdir(os.path.join(overlay, "src", top)):
            shutil.rmtree(os.path.join(overlay, "src", top))
        shutil.copytree(os.path.join(GOCODE, top), os.path.join(overlay, "src", top),
                        ignore=lambda d, fs: [f for f in fs if f.endswith("_test.go")])
        dest = os.path.join(overlay, "src", imp)
        conn = os.path.join(dest, "conn.go")
        text = open(conn).read()
        names = ["writeCommand", "Flush", "Do"]
        timeout = re.search(r"^func \(c \*conn\) DoWithTimeout\(", text, re.M) is not None
        if timeout:
            names.append("DoWithTimeout")
        for name in names:
            pat = re.compile(r"^func \(c \*conn\) %s\(" % name, re.M)
            if len(pat.findall(text)) != 1:
                raise SystemExit("%s: no single conn.%s to rename" % (conn, name))
            text = pat.sub("func (c *conn) kp%s%s(" % (name[0].upper(), name[1:]), text)
        open(conn, "w").write(text)
        shutil.copy(os.path.join(HERE, "keyplan_record.go"), dest)
        if timeout:
            shutil.copy(os.path.join(HERE, "keyplan_record_timeout.go"), dest)
        done.append(imp)
    return done


if __name__ == "__main__":
    print("\n".join(build(sys.argv[1], sys.argv[2:] or DEFAULT)))
