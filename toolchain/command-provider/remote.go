package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// connSpec is the `connection` (or nested `proxy`) input, with the SDK's
// documented defaults applied: the Python SDK only fills them in when
// ConnectionArgs is used, not for plain dicts.
type connSpec struct {
	host, user, password             string
	privateKey, privateKeyPassword   string
	agentSocketPath, hostKey         string
	port, dialErrorLimit, perDialSec int
	proxy                            *connSpec
}

func parseConn(pm resource.PropertyMap) (*connSpec, error) {
	if pm == nil {
		return nil, errors.New("missing required input `connection`")
	}
	c := &connSpec{
		host:               getString(pm, "host"),
		user:               getString(pm, "user"),
		password:           getString(pm, "password"),
		privateKey:         getString(pm, "privateKey"),
		privateKeyPassword: getString(pm, "privateKeyPassword"),
		agentSocketPath:    getString(pm, "agentSocketPath"),
		hostKey:            getString(pm, "hostKey"),
		port:               int(getNumber(pm, "port", 22)),
		dialErrorLimit:     int(getNumber(pm, "dialErrorLimit", 10)),
		perDialSec:         int(getNumber(pm, "perDialTimeout", 15)),
	}
	if c.host == "" {
		return nil, errors.New("missing required input `connection.host`")
	}
	if c.user == "" {
		c.user = "root"
	}
	if p := getObject(pm, "proxy"); p != nil {
		proxy, err := parseConn(p)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		c.proxy = proxy
	}
	return c, nil
}

func (c *connSpec) addr() string { return net.JoinHostPort(c.host, strconv.Itoa(c.port)) }

// clientConfig builds auth in the official provider's order of preference:
// private key, then password, then an SSH agent.
func (c *connSpec) clientConfig() (*ssh.ClientConfig, func(), error) {
	cleanup := func() {}
	var auths []ssh.AuthMethod
	if c.privateKey != "" {
		var signer ssh.Signer
		var err error
		if c.privateKeyPassword != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(c.privateKey), []byte(c.privateKeyPassword))
		} else {
			signer, err = ssh.ParsePrivateKey([]byte(c.privateKey))
		}
		if err != nil {
			return nil, cleanup, fmt.Errorf("parsing privateKey: %w", err)
		}
		auths = append(auths, ssh.PublicKeys(signer))
	}
	if c.password != "" {
		pw := c.password
		auths = append(auths, ssh.Password(pw),
			ssh.KeyboardInteractive(func(_, _ string, qs []string, _ []bool) ([]string, error) {
				answers := make([]string, len(qs))
				for i := range qs {
					answers[i] = pw
				}
				return answers, nil
			}))
	}
	sock := c.agentSocketPath
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock != "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			cleanup = func() { conn.Close() }
			auths = append(auths, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
		}
	}
	hostKeyCB := ssh.InsecureIgnoreHostKey() // documented: no hostKey => not verified
	if c.hostKey != "" {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(c.hostKey))
		if err != nil {
			return nil, cleanup, fmt.Errorf("parsing hostKey: %w", err)
		}
		hostKeyCB = ssh.FixedHostKey(key)
	}
	return &ssh.ClientConfig{
		User:            c.user,
		Auth:            auths,
		HostKeyCallback: hostKeyCB,
		Timeout:         time.Duration(c.perDialSec) * time.Second,
	}, cleanup, nil
}

// dial connects (through the proxy if any), retrying up to dialErrorLimit
// times (-1: forever) because freshly created hosts often refuse at first.
// The returned closer also closes the proxy connection.
func (c *connSpec) dial(ctx context.Context) (*ssh.Client, func(), error) {
	var proxy *ssh.Client
	closeProxy := func() {}
	if c.proxy != nil {
		var err error
		var closeInner func()
		if proxy, closeInner, err = c.proxy.dial(ctx); err != nil {
			return nil, nil, fmt.Errorf("dialing proxy: %w", err)
		}
		closeProxy = closeInner
	}
	cfg, cleanup, err := c.clientConfig()
	defer cleanup()
	if err != nil {
		closeProxy()
		return nil, nil, err
	}
	var lastErr error
	attempt := 1
	for ; ; attempt++ {
		var client *ssh.Client
		client, lastErr = c.dialOnce(proxy, cfg)
		if lastErr == nil {
			return client, func() { client.Close(); closeProxy() }, nil
		}
		if c.dialErrorLimit >= 0 && attempt >= max(c.dialErrorLimit, 1) {
			break
		}
		delay := time.Duration(min(attempt, 5)) * time.Second
		select {
		case <-ctx.Done():
			closeProxy()
			return nil, nil, fmt.Errorf("dialing %s: %w (last error: %v)", c.addr(), ctx.Err(), lastErr)
		case <-time.After(delay):
		}
	}
	closeProxy()
	return nil, nil, fmt.Errorf("dialing %s: giving up after %d attempts: %w", c.addr(), attempt, lastErr)
}

func (c *connSpec) dialOnce(proxy *ssh.Client, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	if proxy == nil {
		return ssh.Dial("tcp", c.addr(), cfg)
	}
	conn, err := proxy.Dial("tcp", c.addr())
	if err != nil {
		return nil, err
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, c.addr(), cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// remoteCommandLine prefixes the command with `export K=V;` because sshd
// refuses SSH "env" requests unless AcceptEnv lists each variable.
func remoteCommandLine(spec runSpec) (string, error) {
	keys := make([]string, 0, len(spec.env))
	for k := range spec.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("environment variable name %q is not a valid shell identifier", k)
		}
		fmt.Fprintf(&b, "export %s=%s; ", k, shellQuote(spec.env[k]))
	}
	b.WriteString(spec.command)
	return b.String(), nil
}

// runRemote runs spec over SSH on the host described by conn.
func runRemote(ctx context.Context, conn *connSpec, spec runSpec) (stdout, stderr string, err error) {
	line, err := remoteCommandLine(spec)
	if err != nil {
		return "", "", err
	}
	client, closeClient, err := conn.dial(ctx)
	if err != nil {
		return "", "", err
	}
	defer closeClient()
	session, err := client.NewSession()
	if err != nil {
		return "", "", fmt.Errorf("opening SSH session: %w", err)
	}
	defer session.Close()
	if spec.stdin != "" {
		session.Stdin = strings.NewReader(spec.stdin)
	}
	var outBuf, errBuf bytes.Buffer
	var flush func()
	session.Stdout, session.Stderr, flush = outputWriters(spec, &outBuf, &errBuf)

	done := make(chan error, 1)
	go func() { done <- session.Run(line) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = session.Signal(ssh.SIGKILL)
		closeClient() // unblocks Run
		<-done
		err = ctx.Err()
	}
	flush()
	stdout, stderr = outBuf.String(), errBuf.String()
	if err != nil {
		return trimOutput(stdout), trimOutput(stderr), &runError{spec.command, err, stdout, stderr}
	}
	return trimOutput(stdout), trimOutput(stderr), nil
}
