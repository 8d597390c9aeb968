package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"golang.org/x/crypto/ssh"
)

// startSSHServer runs a tiny SSH server that executes "exec" requests with
// /bin/sh and, like a stock sshd, refuses "env" requests.
func startSSHServer(t *testing.T, password string) (host string, port int, hostKey string) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PasswordCallback: func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
		if string(pw) != password {
			return nil, errors.New("denied")
		}
		return nil, nil
	}}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(c, cfg)
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	return "127.0.0.1", addr.Port, string(ssh.MarshalAuthorizedKey(signer.PublicKey()))
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for req := range creqs {
				if req.Type != "exec" {
					_ = req.Reply(false, nil)
					continue
				}
				_ = req.Reply(true, nil)
				n := binary.BigEndian.Uint32(req.Payload)
				cmd := exec.Command("/bin/sh", "-c", string(req.Payload[4:4+n]))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				status := uint32(0)
				if err := cmd.Run(); err != nil {
					status = 1
					var ee *exec.ExitError
					if errors.As(err, &ee) {
						status = uint32(ee.ExitCode())
					}
				}
				_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
				return
			}
		}()
	}
}

func TestRunRemote(t *testing.T) {
	host, port, hostKey := startSSHServer(t, "pw")
	inputs := pm(map[string]any{
		"connection": map[string]any{
			"host": host, "port": float64(port), "user": "me", "password": "pw", "hostKey": hostKey,
		},
		"environment": map[string]any{"MSG": "it's here"},
		"stdin":       "piped",
	})
	conn, err := parseConn(getObject(inputs, "connection"))
	if err != nil {
		t.Fatal(err)
	}
	prev := pm(map[string]any{"stdout": "before"})
	out, errOut, err := runRemote(context.Background(), conn,
		specFor(inputs, prev, `echo "$MSG $PULUMI_COMMAND_STDOUT $(cat)"; echo warn >&2`))
	if err != nil {
		t.Fatal(err)
	}
	if out != "it's here before piped" || errOut != "warn" {
		t.Errorf("stdout=%q stderr=%q", out, errOut)
	}

	_, _, err = runRemote(context.Background(), conn, specFor(inputs, nil, "echo nope >&2; exit 4"))
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("want failure with stderr, got %v", err)
	}
}

func TestRunRemoteDialErrors(t *testing.T) {
	host, port, _ := startSSHServer(t, "pw")
	// Wrong password: fails after dialErrorLimit attempts.
	conn, _ := parseConn(pm(map[string]any{"host": host, "port": float64(port), "password": "bad", "dialErrorLimit": float64(1)}))
	if _, _, err := runRemote(context.Background(), conn, runSpec{command: "true"}); err == nil ||
		!strings.Contains(err.Error(), "1 attempts") {
		t.Errorf("want auth failure, got %v", err)
	}
	// Mismatched host key is rejected.
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := ssh.NewSignerFromKey(otherKey)
	conn, _ = parseConn(pm(map[string]any{"host": host, "port": float64(port), "password": "pw",
		"dialErrorLimit": float64(1), "hostKey": string(ssh.MarshalAuthorizedKey(s.PublicKey()))}))
	if _, _, err := runRemote(context.Background(), conn, runSpec{command: "true"}); err == nil {
		t.Error("want host key mismatch error")
	}
}

func TestParseConnDefaults(t *testing.T) {
	c, err := parseConn(pm(map[string]any{"host": "h"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.port != 22 || c.user != "root" || c.dialErrorLimit != 10 || c.perDialSec != 15 {
		t.Errorf("defaults: %+v", c)
	}
	if _, err := parseConn(pm(map[string]any{"port": 22})); err == nil {
		t.Error("missing host should fail")
	}
}

func TestRemoteCommandLineQuoting(t *testing.T) {
	line, err := remoteCommandLine(runSpec{command: "run", env: map[string]string{"B": "x'y", "A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `export A='1'; export B='x'\''y'; run`; line != want {
		t.Errorf("got %q want %q", line, want)
	}
	if _, err := remoteCommandLine(runSpec{env: map[string]string{"BAD-NAME": "v"}}); err == nil {
		t.Error("invalid env name should fail")
	}
}

func TestGRPCRemoteCreate(t *testing.T) {
	host, port, _ := startSSHServer(t, "pw")
	c := startServer(t)
	urn := "urn:pulumi:dev::proj::command:remote:Command::r"
	props := mustMarshal(t, resource.PropertyMap{
		"connection": resource.MakeSecret(resource.NewObjectProperty(resource.PropertyMap{
			"host": resource.NewStringProperty(host), "port": resource.NewNumberProperty(float64(port)),
			"password": resource.NewStringProperty("pw"),
		})),
		"create": resource.NewStringProperty("echo remote-" + strconv.Itoa(port)),
	})
	chk, err := c.Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: props})
	if err != nil || len(chk.Failures) > 0 {
		t.Fatalf("Check: %v %v", chk, err)
	}
	resp, err := c.Create(context.Background(), &pulumirpc.CreateRequest{Urn: urn, Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	out := mustUnmarshal(t, resp.Properties)
	if out["stdout"].StringValue() != "remote-"+strconv.Itoa(port) || !out["connection"].IsSecret() {
		t.Errorf("outputs: %v", out)
	}
	bad := mustMarshal(t, resource.PropertyMap{"create": resource.NewStringProperty("x")})
	chk, err = c.Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: bad})
	if err != nil || len(chk.Failures) != 1 {
		t.Errorf("missing connection should be a check failure: %v %v", chk, err)
	}
}
