package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func pm(m map[string]any) resource.PropertyMap { return resource.NewPropertyMapFromMap(m) }

func TestDiffNoChange(t *testing.T) {
	in := pm(map[string]any{"create": "echo hi", "triggers": []any{"a"}})
	state := withOutputs(in, resource.NewStringProperty("hi"), resource.NewStringProperty(""))
	d := diff(inputsOf(state), in, nil)
	if d.Changes != pulumirpc.DiffResponse_DIFF_NONE || len(d.Replaces) != 0 {
		t.Fatalf("want no diff, got %v", d)
	}
}

func TestDiffTriggersReplace(t *testing.T) {
	olds := pm(map[string]any{"create": "echo hi", "triggers": []any{"a"}})
	for name, news := range map[string]resource.PropertyMap{
		"changed": pm(map[string]any{"create": "echo hi", "triggers": []any{"b"}}),
		"removed": pm(map[string]any{"create": "echo hi"}),
		"unknown": {"create": resource.NewStringProperty("echo hi"), "triggers": resource.MakeComputed(resource.NewStringProperty(""))},
	} {
		d := diff(olds, news, nil)
		if d.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(d.Replaces) != 1 || d.Replaces[0] != "triggers" {
			t.Errorf("%s: want replace on triggers, got %v", name, d)
		}
		if d.DeleteBeforeReplace {
			t.Errorf("%s: want create-before-delete", name)
		}
	}
	added := diff(pm(map[string]any{"create": "x"}), pm(map[string]any{"create": "x", "triggers": []any{1}}), nil)
	if added.DetailedDiff["triggers"].Kind != pulumirpc.PropertyDiff_ADD_REPLACE {
		t.Errorf("want ADD_REPLACE, got %v", added.DetailedDiff["triggers"])
	}
}

func TestDiffUpdates(t *testing.T) {
	olds := pm(map[string]any{"create": "a", "delete": "d", "environment": map[string]any{"K": "1"}, "dir": "/tmp"})
	cases := map[string]resource.PropertyMap{
		"create":      pm(map[string]any{"create": "b", "delete": "d", "environment": map[string]any{"K": "1"}, "dir": "/tmp"}),
		"delete":      pm(map[string]any{"create": "a", "delete": "e", "environment": map[string]any{"K": "1"}, "dir": "/tmp"}),
		"environment": pm(map[string]any{"create": "a", "delete": "d", "environment": map[string]any{"K": "2"}, "dir": "/tmp"}),
		"dir":         pm(map[string]any{"create": "a", "delete": "d", "environment": map[string]any{"K": "1"}}),
		"interpreter": pm(map[string]any{"create": "a", "delete": "d", "environment": map[string]any{"K": "1"}, "dir": "/tmp", "interpreter": []any{"/bin/bash", "-c"}}),
	}
	for key, news := range cases {
		d := diff(olds, news, nil)
		if d.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(d.Replaces) != 0 {
			t.Errorf("%s: want in-place update, got %v", key, d)
		}
		if len(d.Diffs) != 1 || d.Diffs[0] != key {
			t.Errorf("%s: want diffs [%s], got %v", key, key, d.Diffs)
		}
	}
	if d := diff(olds, cases["create"], []string{"create"}); d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Errorf("ignoreChanges not honoured: %v", d)
	}
}

func TestDiffSecretness(t *testing.T) {
	plain := pm(map[string]any{"stdin": "pw"})
	secret := resource.PropertyMap{"stdin": resource.MakeSecret(resource.NewStringProperty("pw"))}
	if d := diff(secret, secret, nil); d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Errorf("equal secrets should not diff: %v", d)
	}
	// Becoming secret updates the state, but needs no re-run.
	if d := diff(plain, secret, nil); d.Changes != pulumirpc.DiffResponse_DIFF_SOME {
		t.Errorf("secret-ness change should diff: %v", d)
	}
	if needsRun(plain, secret) {
		t.Error("secret-ness change alone should not re-run the command")
	}
}

func TestNeedsRun(t *testing.T) {
	olds := pm(map[string]any{"create": "a", "delete": "d"})
	if needsRun(olds, pm(map[string]any{"create": "a", "delete": "e", "logging": "none"})) {
		t.Error("delete/logging change should not re-run")
	}
	if !needsRun(olds, pm(map[string]any{"create": "b", "delete": "d"})) {
		t.Error("create change should re-run")
	}
}

func runL(t *testing.T, spec runSpec) (string, string, error) {
	t.Helper()
	return runLocal(context.Background(), spec)
}

func TestRunLocalBasics(t *testing.T) {
	dir := t.TempDir()
	in := pm(map[string]any{
		"dir":         dir,
		"environment": map[string]any{"GREETING": "hello"},
		"stdin":       "from-stdin\n",
	})
	out, errOut, err := runL(t, specFor(in, nil, `echo "$GREETING $(pwd)"; cat; echo oops >&2`))
	if err != nil {
		t.Fatal(err)
	}
	want := "hello " + dir + "\nfrom-stdin"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if errOut != "oops" {
		t.Errorf("stderr = %q (one trailing newline should be trimmed)", errOut)
	}
	// Only one trailing newline is trimmed, as in the official provider.
	if out, _, _ := runL(t, specFor(in, nil, `printf 'a\n\n'`)); out != "a\n" {
		t.Errorf("stdout = %q, want %q", out, "a\n")
	}
}

func TestRunLocalInterpreter(t *testing.T) {
	in := pm(map[string]any{"interpreter": []any{"/bin/sh", "-c", "--"}})
	if out, _, err := runL(t, specFor(in, nil, "echo via-interp")); err != nil || out != "via-interp" {
		t.Fatalf("out=%q err=%v", out, err)
	}
}

func TestRunLocalFailure(t *testing.T) {
	_, _, err := runL(t, specFor(pm(nil), nil, "echo partial; echo 'it broke' >&2; exit 3"))
	if err == nil {
		t.Fatal("want error")
	}
	msg := err.Error()
	for _, s := range []string{"exit status 3", "it broke", "partial"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}
}

func TestRunLocalPreviousOutputEnv(t *testing.T) {
	prev := pm(map[string]any{"stdout": "old-out", "stderr": "old-err"})
	cmd := `echo "$PULUMI_COMMAND_STDOUT/$PULUMI_COMMAND_STDERR"`
	if out, _, _ := runL(t, specFor(pm(nil), prev, cmd)); out != "old-out/old-err" {
		t.Errorf("got %q", out)
	}
	off := pm(map[string]any{"addPreviousOutputInEnv": false})
	if out, _, _ := runL(t, specFor(off, prev, cmd)); out != "/" {
		t.Errorf("addPreviousOutputInEnv=false: got %q", out)
	}
}

func TestRunLocalLogging(t *testing.T) {
	for logging, want := range map[string]string{
		"":                "o1|e1|",
		"stdoutAndStderr": "o1|e1|",
		"stdout":          "o1|",
		"stderr":          "e1|",
		"none":            "",
	} {
		var got strings.Builder
		spec := specFor(pm(map[string]any{"logging": logging}), nil, "echo o1; sleep 0.1; echo e1 >&2")
		spec.log = func(l string) { got.WriteString(l + "|") }
		if _, _, err := runL(t, spec); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("logging=%q: logged %q, want %q", logging, got.String(), want)
		}
	}
}

func TestRunLocalBackgroundChildDoesNotHang(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the pipe grace period")
	}
	out, _, err := runL(t, specFor(pm(nil), nil, "sleep 30 & echo started"))
	if err != nil || out != "started" {
		t.Fatalf("out=%q err=%v", out, err)
	}
}

func TestRunLocalMissingDir(t *testing.T) {
	in := pm(map[string]any{"dir": filepath.Join(os.TempDir(), "definitely-missing-dir-xyz")})
	if _, _, err := runL(t, specFor(in, nil, "true")); err == nil {
		t.Fatal("want error for missing dir")
	}
}
