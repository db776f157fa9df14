// keyplan corpus recorder for redigo (a development tool, not run by CI; see overlay.py).
//
// overlay.py copies redigo's redis package into a GOPATH overlay, renames four of conn's methods
// (writeCommand, Flush, Do, DoWithTimeout: kpWriteCommand, ...) and adds this file, whose methods
// of the same names log and call them. Every command written is kept with the frame that wrote
// it; when the connection is flushed (Do, DoWithTimeout, Flush) what was written since the last
// flush is one event in KEYPLAN_REC_OUT/events-<pid>.jsonl, in the shape summarise.py reads: a
// command when Do sent it alone, else a pipeline (a transaction when it holds MULTI), with the
// frame of its first command (open), of the flush (send) and of each command (queued). Commands
// carry their arguments (strings, cut at 300 bytes); summarise.py asks a real server for the
// keys. A frame is the first one outside this package and Go's runtime: its file relative to
// KEYPLAN_REC_ROOT when it lies there.

package redis

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
)

type kpFrame struct {
	File   string  `json:"file"`
	Line   int     `json:"line"`
	InRoot bool    `json:"in_root"`
	Func   string  `json:"func"`
	Via    *string `json:"via"`
}

type kpCmd struct {
	Cmd  string   `json:"cmd"`
	Args []string `json:"args"`
	At   *kpFrame `json:"at"`
}

var kp struct {
	sync.Mutex
	out     string
	root    string
	pkg     string
	file    *os.File
	pending map[*conn][]kpCmd
	seen    map[string]int
	real    map[string]string
}

const kpMaxPerSite = 40

var kpSkip = map[string]bool{"MULTI": true, "EXEC": true, "DISCARD": true, "INFO": true, "PING": true, "SELECT": true,
	"CLIENT": true, "SCRIPT": true, "QUIT": true, "HELLO": true, "AUTH": true, "READONLY": true, "SUBSCRIBE": true,
	"PSUBSCRIBE": true, "UNSUBSCRIBE": true, "PUNSUBSCRIBE": true, "FLUSHDB": true, "FLUSHALL": true, "CONFIG": true,
	"DBSIZE": true, "TIME": true, "KEYS": true, "SCAN": true, "ECHO": true}

func init() {
	kp.out = os.Getenv("KEYPLAN_REC_OUT")
	if kp.out == "" {
		return
	}
	if r := os.Getenv("KEYPLAN_REC_ROOT"); r != "" {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			r = rr
		}
		kp.root = strings.TrimSuffix(r, "/") + "/"
	}
	kp.pkg = reflect.TypeOf(conn{}).PkgPath() + "."
	kp.pending = map[*conn][]kpCmd{}
	kp.seen = map[string]int{}
	kp.real = map[string]string{}
	os.MkdirAll(kp.out, 0o755)
	f, err := os.OpenFile(filepath.Join(kp.out, fmt.Sprintf("events-%d.jsonl", os.Getpid())), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keyplan recorder:", err)
		kp.out = ""
		return
	}
	kp.file = f
}

func kpRealpath(f string) string {
	if r, ok := kp.real[f]; ok {
		return r
	}
	r, err := filepath.EvalSymlinks(f)
	if err != nil {
		r = f
	}
	kp.real[f] = r
	return r
}

// kpCaller is the first frame outside this package and the runtime (kp is locked).
func kpCaller() *kpFrame {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var via *string
	for {
		fr, more := frames.Next()
		if strings.HasPrefix(fr.Function, kp.pkg) || strings.HasPrefix(fr.Function, "runtime.") {
			v := filepath.Base(fr.File) + ":" + fr.Function[strings.LastIndex(fr.Function, ".")+1:]
			via = &v
		} else if fr.File != "" {
			rp := kpRealpath(fr.File)
			in := kp.root != "" && strings.HasPrefix(rp, kp.root)
			file := rp
			if in {
				file = rp[len(kp.root):]
			}
			return &kpFrame{File: file, Line: fr.Line, InRoot: in, Func: fr.Function, Via: via}
		}
		if !more {
			return nil
		}
	}
}

func kpStr(a interface{}) string {
	var s string
	switch v := a.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case nil:
		s = ""
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func kpSite(frames ...*kpFrame) string {
	parts := make([]string, len(frames))
	for i, f := range frames {
		if f == nil {
			parts[i] = "-"
		} else {
			parts[i] = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
	}
	return strings.Join(parts, "|")
}

func kpEmit(ev map[string]interface{}, site string) {
	n := kp.seen[site]
	kp.seen[site] = n + 1
	if n >= kpMaxPerSite {
		return
	}
	b, err := json.Marshal(ev)
	if err == nil {
		kp.file.Write(append(b, '\n'))
	}
}

// kpWritten keeps a command written to c, with the frame that wrote it.
func kpWritten(c *conn, cmd string, args []interface{}) {
	if kp.out == "" || cmd == "" {
		return
	}
	kp.Lock()
	defer kp.Unlock()
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = kpStr(a)
	}
	kp.pending[c] = append(kp.pending[c], kpCmd{Cmd: strings.ToUpper(cmd), Args: strs, At: kpCaller()})
}

// kpFlushed logs what was written to c since its last flush; alone: one command sent by Do.
func kpFlushed(c *conn, alone bool) {
	if kp.out == "" {
		return
	}
	kp.Lock()
	defer kp.Unlock()
	cmds := kp.pending[c]
	delete(kp.pending, c)
	if len(cmds) == 0 {
		return
	}
	if alone && len(cmds) == 1 {
		cm := cmds[0]
		if kpSkip[cm.Cmd] || cm.At == nil {
			return
		}
		kpEmit(map[string]interface{}{"t": "command", "cmd": cm.Cmd, "args": cm.Args, "at": cm.At},
			fmt.Sprintf("c%s%s%d", cm.Cmd, kpSite(cm.At), len(cm.Args)))
		return
	}
	tx := false
	kept := []kpCmd{}
	for _, cm := range cmds {
		if cm.Cmd == "MULTI" {
			tx = true
		}
		if cm.Cmd != "MULTI" && cm.Cmd != "EXEC" {
			kept = append(kept, cm)
		}
	}
	if len(kept) == 0 {
		return
	}
	// A subscription connection's traffic (PubSubConn writes SUBSCRIBE and the like with Send
	// and Flush) is no batch.
	pubsub := true
	for _, cm := range kept {
		switch cm.Cmd {
		case "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "PING":
		default:
			pubsub = false
		}
	}
	if pubsub {
		return
	}
	send := kpCaller()
	if send == nil {
		return
	}
	open := cmds[0].At
	sig := ""
	for _, cm := range kept {
		sig += fmt.Sprintf("%s%d", cm.Cmd, len(cm.Args))
	}
	if len(sig) > 400 {
		sig = sig[:400]
	}
	kpEmit(map[string]interface{}{"t": "pipeline", "transaction": tx, "open": open, "send": send, "commands": kept},
		"p"+kpSite(open, send)+sig)
}

func (c *conn) writeCommand(cmd string, args []interface{}) error {
	kpWritten(c, cmd, args)
	return c.kpWriteCommand(cmd, args)
}

func (c *conn) Flush() error {
	err := c.kpFlush()
	kpFlushed(c, false)
	return err
}

func (c *conn) Do(cmd string, args ...interface{}) (interface{}, error) {
	r, err := c.kpDo(cmd, args...)
	kpFlushed(c, cmd != "")
	return r, err
}
