// pulumi-language-python, as small as it can be: the Pulumi engine's language host for Python programs
// and Python policy packs.
//
// The official host lives in an untagged Go module that the Go proxy reachable here does not serve, so
// agensh builds this one instead. It does what the engine needs for `preview`, `up`, `destroy` and
// `--policy-pack`: run a program through the SDK's `pulumi-language-python-exec` shim inside the
// project's virtual environment, and run a policy pack (a plugin) the same way. Dependency installation,
// code generation and conversions are left unimplemented; the set-up script installs dependencies.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

var version = "dev" // set with -ldflags "-X main.version=..."

// exitCodeUserMessage is what the exec shim returns after it has already shown the user an error.
const exitCodeUserMessage = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
	exec   string // path of pulumi-language-python-exec
}

func main() {
	var engine string
	args := os.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") { // flags such as -tracing are accepted and ignored
		args = args[1:]
	}
	if len(args) > 0 {
		engine = args[0]
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	h := &host{engine: engine, exec: filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
	os.Exit(1)
}

func (h *host) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engine = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// Plugins are loaded on demand by the engine as resources register (and automatic acquisition is off).
func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

// Dependencies are installed by the project's set-up script, not by the engine.
func (h *host) InstallDependencies(*pulumirpc.InstallDependenciesRequest, grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse]) error {
	return nil
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	return &pulumirpc.AboutResponse{Executable: "python3", Metadata: map[string]string{"host": "agensh"}}, nil
}

func (h *host) GetProgramDependencies(context.Context, *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

// python returns the interpreter of the program's virtual environment (Pulumi.yaml `virtualenv` option,
// relative to the root directory), or python3 from PATH when none is configured.
func python(info *pulumirpc.ProgramInfo) (string, []string, error) {
	opts := map[string]any{}
	if info != nil && info.GetOptions() != nil {
		opts = info.GetOptions().AsMap()
	}
	venv, _ := opts["virtualenv"].(string)
	if venv == "" {
		return "python3", nil, nil
	}
	if !filepath.IsAbs(venv) {
		venv = filepath.Join(info.GetRootDirectory(), venv)
	}
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		return "", nil, fmt.Errorf("the virtualenv %q has no bin/python; run `make setup` (or create it with python3 -m venv %s)", venv, venv)
	}
	env := []string{"VIRTUAL_ENV=" + venv, "PATH=" + filepath.Join(venv, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
	return py, env, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	py, env, err := python(req.GetInfo())
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	program := req.GetInfo().GetEntryPoint()
	if program == "" {
		program = req.GetProgram()
	}
	if program == "" {
		program = "."
	}
	args := []string{"-u", h.exec}
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engine)
	add("project", req.GetProject())
	add("root_directory", req.GetInfo().GetRootDirectory())
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("dry_run", fmt.Sprint(req.GetDryRun()))
	add("parallel", fmt.Sprint(req.GetParallel()))
	add("organization", req.GetOrganization())
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	// Never "null": the SDK expects an object and a list even when the stack has no config.
	configMap, secretList := req.GetConfig(), req.GetConfigSecretKeys()
	if configMap == nil {
		configMap = map[string]string{}
	}
	if secretList == nil {
		secretList = []string{}
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(secretList)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), env...),
		"PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == exitCodeUserMessage {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the Python program: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a Python plugin (a policy pack): `python -u <dir> <args>` in the plugin's virtualenv,
// streaming its output back so the engine can read the port it prints.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]) error {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{RootDirectory: req.GetProgram(), ProgramDirectory: req.GetProgram(), Options: &structpb.Struct{}}
	}
	py, env, err := python(info)
	if err != nil {
		return err
	}
	dir := info.GetProgramDirectory()
	cmd := exec.CommandContext(server.Context(), py, append([]string{"-u", dir}, req.GetArgs()...)...)
	cmd.Dir = req.GetPwd()
	cmd.Env = append(append(req.GetEnv(), env...), os.Environ()...)
	mu := &sync.Mutex{} // stdout and stderr are copied concurrently; a stream's Send is not
	stdout, stderr := &streamWriter{server: server, mu: mu}, &streamWriter{server: server, mu: mu, stderr: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	code := int32(0)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return fmt.Errorf("could not run plugin %s: %w", dir, err)
		}
		code = int32(exit.ExitCode())
	}
	return server.Send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code}})
}

type streamWriter struct {
	server grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]
	mu     *sync.Mutex
	stderr bool
}

func (w *streamWriter) Write(p []byte) (int, error) {
	buf := append([]byte(nil), p...)
	var out pulumirpc.RunPluginResponse
	if w.stderr {
		out.Output = &pulumirpc.RunPluginResponse_Stderr{Stderr: buf}
	} else {
		out.Output = &pulumirpc.RunPluginResponse_Stdout{Stdout: buf}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.server.Send(&out); err != nil {
		return 0, err
	}
	return len(p), nil
}

var _ io.Writer = (*streamWriter)(nil)
