package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// runSpec is one command invocation, independent of where it runs.
type runSpec struct {
	command     string
	dir         string            // local only
	interpreter []string          // local only
	env         map[string]string // extra variables on top of the provider's own environment
	stdin       string
	logging     string            // stdout | stderr | stdoutAndStderr | none
	log         func(line string) // receives logged output lines; may be nil
}

// specFor builds the run for `command` from (unsecreted) inputs. prev is the
// prior state for update/delete, whose stdout/stderr are exposed to the
// command unless addPreviousOutputInEnv is false.
func specFor(inputs, prev resource.PropertyMap, command string) runSpec {
	env := getStringMap(inputs, "environment")
	if env == nil {
		env = map[string]string{}
	}
	if prev != nil && getBool(inputs, "addPreviousOutputInEnv", true) {
		env["PULUMI_COMMAND_STDOUT"] = getString(prev, "stdout")
		env["PULUMI_COMMAND_STDERR"] = getString(prev, "stderr")
	}
	logging := getString(inputs, "logging")
	if logging == "" {
		logging = "stdoutAndStderr"
	}
	return runSpec{
		command:     command,
		dir:         getString(inputs, "dir"),
		interpreter: getStrings(inputs, "interpreter"),
		env:         env,
		stdin:       getString(inputs, "stdin"),
		logging:     logging,
	}
}

// runError carries the captured output of a failed command, so the engine's
// error message shows why it failed.
type runError struct {
	command        string
	err            error
	stdout, stderr string
}

const errTail = 4096

func (e *runError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: running %q", e.err, e.command)
	if s := tail(e.stderr, errTail); s != "" {
		fmt.Fprintf(&b, "\n--- stderr ---\n%s", s)
	}
	if s := tail(e.stdout, errTail/2); s != "" {
		fmt.Fprintf(&b, "\n--- stdout ---\n%s", s)
	}
	return b.String()
}

func (e *runError) Unwrap() error { return e.err }

func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// trimOutput mirrors the official provider, which drops one trailing newline.
func trimOutput(s string) string { return strings.TrimSuffix(s, "\n") }

// outputWriters returns the writers for stdout and stderr: a capture buffer,
// plus a line logger for the streams the `logging` input asks for.
func outputWriters(spec runSpec, stdout, stderr *bytes.Buffer) (io.Writer, io.Writer, func()) {
	if spec.log == nil || spec.logging == "none" {
		return stdout, stderr, func() {}
	}
	lw := &lineWriter{emit: spec.log}
	var o, e io.Writer = stdout, stderr
	if spec.logging == "stdout" || spec.logging == "stdoutAndStderr" {
		o = io.MultiWriter(stdout, lw)
	}
	if spec.logging == "stderr" || spec.logging == "stdoutAndStderr" {
		e = io.MultiWriter(stderr, lw)
	}
	return o, e, lw.flush
}

// lineWriter forwards complete lines to emit; it is shared by stdout and
// stderr, hence the lock.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
}

// pipeGrace bounds how long we wait for output after the command exits: a
// background child (`server &`) may keep the pipes open forever.
const pipeGrace = 5 * time.Second

// runLocal runs spec through its interpreter on this machine.
func runLocal(ctx context.Context, spec runSpec) (stdout, stderr string, err error) {
	interp := spec.interpreter
	if len(interp) == 0 {
		interp = []string{"/bin/sh", "-c"}
	}
	args := append(append([]string{}, interp[1:]...), spec.command)
	cmd := exec.CommandContext(ctx, interp[0], args...)
	cmd.Dir = spec.dir
	cmd.Env = os.Environ()
	for k, v := range spec.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if spec.stdin != "" {
		cmd.Stdin = strings.NewReader(spec.stdin)
	}
	var outBuf, errBuf bytes.Buffer
	var flush func()
	cmd.Stdout, cmd.Stderr, flush = outputWriters(spec, &outBuf, &errBuf)
	// Own process group, so cancellation also kills the command's children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeGrace

	err = cmd.Run()
	flush()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // the command itself succeeded; only a lingering child held the pipes
	}
	stdout, stderr = outBuf.String(), errBuf.String()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return trimOutput(stdout), trimOutput(stderr), &runError{spec.command, err, stdout, stderr}
	}
	return trimOutput(stdout), trimOutput(stderr), nil
}
