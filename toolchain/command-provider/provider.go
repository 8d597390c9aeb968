package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
)

type cmdProvider struct {
	pulumirpc.UnimplementedResourceProviderServer

	host *provider.HostClient // nil when not started by the engine (tests)

	// root is cancelled by the engine's Cancel RPC, aborting running commands.
	root   context.Context
	cancel context.CancelFunc
}

func newProvider(host *provider.HostClient) *cmdProvider {
	ctx, cancel := context.WithCancel(context.Background())
	return &cmdProvider{host: host, root: ctx, cancel: cancel}
}

// --- provider-level RPCs ---------------------------------------------------

func (p *cmdProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// GetSchema returns a minimal schema: the SDK is pre-generated, so the engine
// only needs the package name and version.
func (p *cmdProvider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	b, err := json.Marshal(map[string]string{"name": "command", "version": version})
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetSchemaResponse{Schema: string(b)}, nil
}

func (p *cmdProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *cmdProvider) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (p *cmdProvider) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	// AcceptResources stays false: the engine then passes resource references
	// (e.g. in `triggers`) as plain IDs/URNs, which compare fine in Diff.
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true}, nil
}

func (p *cmdProvider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	p.cancel()
	return &emptypb.Empty{}, nil
}

// --- resource RPCs -----------------------------------------------------------

func resourceType(typ, urn string) string {
	if typ != "" {
		return typ
	}
	if u, err := resource.ParseURN(urn); err == nil {
		return string(u.Type())
	}
	return ""
}

func (p *cmdProvider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	typ := resourceType(req.GetType(), req.GetUrn())
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	switch typ {
	case tokLocalCommand:
	case tokRemoteCommand:
		// Validate `connection` only once it is known (it is unknown in
		// previews that depend on a not-yet-created host).
		if c := news["connection"]; !c.ContainsUnknowns() {
			if _, err := parseConn(getObject(unsecretMap(news), "connection")); err != nil {
				failures = append(failures, &pulumirpc.CheckFailure{Property: "connection", Reason: err.Error()})
			}
		}
	default:
		return nil, fmt.Errorf("unsupported resource type %q (this provider implements %s and %s only)",
			typ, tokLocalCommand, tokRemoteCommand)
	}
	// Inputs are passed through untouched; defaults are applied when running.
	return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: failures}, nil
}

// oldInputsOf prefers the engine's recorded old inputs and falls back to the
// old state minus computed keys (outputs are inputs + stdout/stderr here).
func oldInputsOf(oldInputs, oldState resource.PropertyMap) resource.PropertyMap {
	if len(oldInputs) > 0 {
		return oldInputs
	}
	return inputsOf(oldState)
}

func (p *cmdProvider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, oldInputs, news, err := unmarshal3(req.GetOlds(), req.GetOldInputs(), req.GetNews())
	if err != nil {
		return nil, err
	}
	return diff(oldInputsOf(oldInputs, olds), news, req.GetIgnoreChanges()), nil
}

// diff: any change to `triggers` replaces the resource (create runs again,
// then the old one's delete); every other input change is an in-place update.
func diff(olds, news resource.PropertyMap, ignore []string) *pulumirpc.DiffResponse {
	resp := &pulumirpc.DiffResponse{
		Changes:         pulumirpc.DiffResponse_DIFF_NONE,
		HasDetailedDiff: true,
		DetailedDiff:    map[string]*pulumirpc.PropertyDiff{},
	}
	for _, k := range changedKeys(olds, news, ignore, false) {
		replace := k == "triggers"
		kind := pulumirpc.PropertyDiff_UPDATE
		switch {
		case !olds[k].HasValue():
			kind = pulumirpc.PropertyDiff_ADD
		case !news[k].HasValue():
			kind = pulumirpc.PropertyDiff_DELETE
		}
		if replace {
			kind += pulumirpc.PropertyDiff_ADD_REPLACE - pulumirpc.PropertyDiff_ADD
			resp.Replaces = append(resp.Replaces, string(k))
		}
		resp.Diffs = append(resp.Diffs, string(k))
		resp.DetailedDiff[string(k)] = &pulumirpc.PropertyDiff{Kind: kind, InputDiff: true}
		resp.Changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return resp
}

// withOutputs returns inputs plus stdout/stderr; input values keep their
// secret wrappers so secret-ness carries over to the outputs.
func withOutputs(inputs resource.PropertyMap, stdout, stderr resource.PropertyValue) resource.PropertyMap {
	out := inputsOf(inputs)
	out["stdout"] = stdout
	out["stderr"] = stderr
	return out
}

var unknownString = resource.MakeComputed(resource.NewStringProperty(""))

func (p *cmdProvider) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	typ := resourceType(req.GetType(), req.GetUrn())
	props, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		out, err := marshal(withOutputs(props, unknownString, unknownString))
		return &pulumirpc.CreateResponse{Properties: out}, err
	}
	plain := unsecretMap(props)
	var stdout, stderr string
	if cmd := getString(plain, "create"); cmd != "" {
		// Failure returns no ID, so the engine records nothing and the next
		// `up` tries the create again.
		if stdout, stderr, err = p.run(ctx, req.GetTimeout(), typ, req.GetUrn(), specFor(plain, nil, cmd), plain); err != nil {
			return nil, err
		}
	}
	out, err := marshal(withOutputs(props, resource.NewStringProperty(stdout), resource.NewStringProperty(stderr)))
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: newID(req.GetName(), req.GetUrn()), Properties: out}, nil
}

func (p *cmdProvider) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	typ := resourceType(req.GetType(), req.GetUrn())
	olds, oldInputs, news, err := unmarshal3(req.GetOlds(), req.GetOldInputs(), req.GetNews())
	if err != nil {
		return nil, err
	}
	plain := unsecretMap(news)
	cmd := getString(plain, "update")
	if cmd == "" {
		cmd = getString(plain, "create")
	}
	if cmd == "" || !needsRun(oldInputsOf(oldInputs, olds), news) {
		// Only `delete`/`logging` changed: record the new inputs, keep outputs.
		out, err := marshal(withOutputs(news, olds["stdout"], olds["stderr"]))
		return &pulumirpc.UpdateResponse{Properties: out}, err
	}
	if req.GetPreview() {
		out, err := marshal(withOutputs(news, unknownString, unknownString))
		return &pulumirpc.UpdateResponse{Properties: out}, err
	}
	prev := unsecretMap(olds)
	stdout, stderr, err := p.run(ctx, req.GetTimeout(), typ, req.GetUrn(), specFor(plain, prev, cmd), plain)
	if err != nil {
		return nil, err
	}
	out, err := marshal(withOutputs(news, resource.NewStringProperty(stdout), resource.NewStringProperty(stderr)))
	return &pulumirpc.UpdateResponse{Properties: out}, err
}

// needsRun reports whether an update changes anything that affects what the
// update/create command would do.
func needsRun(olds, news resource.PropertyMap) bool {
	for _, k := range changedKeys(olds, news, nil, true) {
		if !noRunKeys[k] {
			return true
		}
	}
	return false
}

func (p *cmdProvider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	typ := resourceType(req.GetType(), req.GetUrn())
	state, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	// The stored state holds the inputs the resource was last applied with,
	// so the old `delete` command (and connection) is used.
	plain := unsecretMap(state)
	if cmd := getString(plain, "delete"); cmd != "" {
		if _, _, err := p.run(ctx, req.GetTimeout(), typ, req.GetUrn(), specFor(plain, plain, cmd), plain); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

// Read returns the stored state unchanged: a command cannot be re-observed.
func (p *cmdProvider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	inputs := req.GetInputs()
	if inputs == nil {
		state, err := unmarshal(req.GetProperties())
		if err != nil {
			return nil, err
		}
		if inputs, err = marshal(inputsOf(state)); err != nil {
			return nil, err
		}
	}
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: inputs}, nil
}

// Invoke implements `command:local:run`, which runs on every program run
// (including previews, as the official provider does).
func (p *cmdProvider) Invoke(ctx context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	if req.GetTok() != tokLocalRun {
		return nil, fmt.Errorf("unsupported function %q", req.GetTok())
	}
	args, err := unmarshal(req.GetArgs())
	if err != nil {
		return nil, err
	}
	plain := unsecretMap(args)
	stdout, stderr, err := p.run(ctx, 0, tokLocalCommand, "", specFor(plain, nil, getString(plain, "command")), plain)
	if err != nil {
		return nil, err
	}
	out, err := marshal(withOutputs(args, resource.NewStringProperty(stdout), resource.NewStringProperty(stderr)))
	return &pulumirpc.InvokeResponse{Return: out}, err
}

// run executes spec locally or over SSH depending on the resource type,
// bounded by the resource's custom timeout and the provider's Cancel.
func (p *cmdProvider) run(ctx context.Context, timeoutSec float64, typ, urn string, spec runSpec,
	inputs resource.PropertyMap,
) (string, string, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(p.root, stop)()
	if timeoutSec > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutSec*float64(time.Second)))
		defer cancel()
	}
	if p.host != nil {
		u := resource.URN(urn)
		spec.log = func(line string) { _ = p.host.Log(ctx, diag.Info, u, line) }
	}
	switch typ {
	case tokLocalCommand:
		return runLocal(ctx, spec)
	case tokRemoteCommand:
		conn, err := parseConn(getObject(inputs, "connection"))
		if err != nil {
			return "", "", err
		}
		return runRemote(ctx, conn, spec)
	}
	return "", "", fmt.Errorf("unsupported resource type %q", typ)
}

// newID mimics the official provider's IDs: the resource name plus a random
// suffix. Nothing looks resources up by ID.
func newID(name, urn string) string {
	if name == "" {
		if u, err := resource.ParseURN(urn); err == nil {
			name = u.Name()
		}
	}
	if name == "" {
		name = "command"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "-" + hex.EncodeToString(b)
}
