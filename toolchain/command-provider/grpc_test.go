package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const localURN = "urn:pulumi:dev::proj::command:local:Command::mycmd"

// startServer serves the provider over real gRPC, as the engine sees it.
func startServer(t *testing.T) pulumirpc.ResourceProviderClient {
	t.Helper()
	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(s, newProvider(nil))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(handle.Port),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); close(cancel); <-handle.Done })
	return pulumirpc.NewResourceProviderClient(conn)
}

func mustMarshal(t *testing.T, m resource.PropertyMap) *structpb.Struct {
	t.Helper()
	s, err := marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustUnmarshal(t *testing.T, s *structpb.Struct) resource.PropertyMap {
	t.Helper()
	m, err := unmarshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestGRPCLifecycle(t *testing.T) {
	ctx := context.Background()
	c := startServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")

	info, err := c.GetPluginInfo(ctx, &emptypb.Empty{})
	if err != nil || info.Version != version {
		t.Fatalf("GetPluginInfo: %v %v", info, err)
	}
	conf, err := c.Configure(ctx, &pulumirpc.ConfigureRequest{AcceptSecrets: true})
	if err != nil || !conf.AcceptSecrets || !conf.SupportsPreview {
		t.Fatalf("Configure: %v %v", conf, err)
	}

	inputs := resource.PropertyMap{
		"create":      resource.NewStringProperty("echo created >> log; echo out-$V"),
		"update":      resource.NewStringProperty(`echo "updated prev=$PULUMI_COMMAND_STDOUT" >> log; echo new-$V`),
		"delete":      resource.NewStringProperty(`echo "deleted prev=$PULUMI_COMMAND_STDOUT" >> log`),
		"dir":         resource.NewStringProperty(dir),
		"environment": resource.NewObjectProperty(resource.PropertyMap{"V": resource.MakeSecret(resource.NewStringProperty("s3cret"))}),
	}
	news := mustMarshal(t, inputs)

	chk, err := c.Check(ctx, &pulumirpc.CheckRequest{Urn: localURN, News: news, Type: tokLocalCommand})
	if err != nil || len(chk.Failures) > 0 {
		t.Fatalf("Check: %v %v", chk, err)
	}

	// Preview: nothing runs, stdout/stderr are unknown.
	prev, err := c.Create(ctx, &pulumirpc.CreateRequest{Urn: localURN, Properties: chk.Inputs, Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := mustUnmarshal(t, prev.Properties); !p["stdout"].IsComputed() || !p["stderr"].IsComputed() {
		t.Errorf("preview outputs should be unknown: %v", p)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal("preview ran the command")
	}

	created, err := c.Create(ctx, &pulumirpc.CreateRequest{Urn: localURN, Properties: chk.Inputs, Name: "mycmd"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Id, "mycmd-") {
		t.Errorf("id = %q", created.Id)
	}
	state := mustUnmarshal(t, created.Properties)
	if got := state["stdout"]; !got.IsString() || got.StringValue() != "out-s3cret" {
		t.Errorf("stdout = %v", got)
	}
	if env := state["environment"].ObjectValue(); !env["V"].IsSecret() {
		t.Errorf("secret input lost its secret-ness in outputs: %v", env)
	}

	// Unchanged inputs: no diff.
	d, err := c.Diff(ctx, &pulumirpc.DiffRequest{Urn: localURN, Olds: created.Properties, News: chk.Inputs})
	if err != nil || d.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Fatalf("Diff unchanged: %v %v", d, err)
	}

	// Changing only `delete` is an update that runs nothing.
	onlyDelete := inputs.Copy()
	onlyDelete["delete"] = resource.NewStringProperty(`echo "deleted2 prev=$PULUMI_COMMAND_STDOUT" >> log`)
	d, err = c.Diff(ctx, &pulumirpc.DiffRequest{Urn: localURN, Olds: created.Properties, News: mustMarshal(t, onlyDelete)})
	if err != nil || d.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(d.Replaces) > 0 {
		t.Fatalf("Diff delete-only: %v %v", d, err)
	}
	up1, err := c.Update(ctx, &pulumirpc.UpdateRequest{Urn: localURN, Olds: created.Properties, News: mustMarshal(t, onlyDelete)})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustUnmarshal(t, up1.Properties)["stdout"]; got.StringValue() != "out-s3cret" {
		t.Errorf("delete-only update changed stdout: %v", got)
	}

	// Changing the environment re-runs `update` with the previous stdout.
	changed := onlyDelete.Copy()
	changed["environment"] = resource.NewObjectProperty(resource.PropertyMap{"V": resource.NewStringProperty("two")})
	up2, err := c.Update(ctx, &pulumirpc.UpdateRequest{Urn: localURN, Olds: up1.Properties, News: mustMarshal(t, changed)})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustUnmarshal(t, up2.Properties)["stdout"]; got.StringValue() != "new-two" {
		t.Errorf("update stdout = %v", got)
	}

	// Trigger change: replace.
	trig := changed.Copy()
	trig["triggers"] = resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("v2")})
	d, err = c.Diff(ctx, &pulumirpc.DiffRequest{Urn: localURN, Olds: up2.Properties, News: mustMarshal(t, trig)})
	if err != nil || len(d.Replaces) != 1 || d.DeleteBeforeReplace {
		t.Fatalf("Diff triggers: %v %v", d, err)
	}

	// Read returns the stored state.
	rd, err := c.Read(ctx, &pulumirpc.ReadRequest{Id: created.Id, Urn: localURN, Properties: up2.Properties})
	if err != nil || mustUnmarshal(t, rd.Properties)["stdout"].StringValue() != "new-two" {
		t.Fatalf("Read: %v %v", rd, err)
	}

	// Delete runs the stored (latest) delete command with the last stdout.
	if _, err := c.Delete(ctx, &pulumirpc.DeleteRequest{Id: created.Id, Urn: localURN, Properties: up2.Properties}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	want := "created\nupdated prev=out-s3cret\ndeleted2 prev=new-two\n"
	if string(b) != want {
		t.Errorf("log = %q, want %q", b, want)
	}
}

func TestGRPCCreateFailure(t *testing.T) {
	c := startServer(t)
	props := mustMarshal(t, resource.PropertyMap{"create": resource.NewStringProperty("echo bad-thing >&2; exit 7")})
	resp, err := c.Create(context.Background(), &pulumirpc.CreateRequest{Urn: localURN, Properties: props})
	if err == nil {
		t.Fatalf("want error, got %v", resp)
	}
	if !strings.Contains(err.Error(), "bad-thing") || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("error lacks stderr/exit status: %v", err)
	}
}

func TestGRPCInvokeRun(t *testing.T) {
	c := startServer(t)
	args := mustMarshal(t, resource.PropertyMap{
		"command":     resource.NewStringProperty("echo $X"),
		"environment": resource.NewObjectProperty(resource.PropertyMap{"X": resource.NewStringProperty("42")}),
	})
	resp, err := c.Invoke(context.Background(), &pulumirpc.InvokeRequest{Tok: tokLocalRun, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustUnmarshal(t, resp.Return)["stdout"]; got.StringValue() != "42" {
		t.Errorf("stdout = %v", got)
	}
}

func TestGRPCCheckRejectsUnknownType(t *testing.T) {
	c := startServer(t)
	_, err := c.Check(context.Background(), &pulumirpc.CheckRequest{
		Urn: "urn:pulumi:dev::proj::command:remote:CopyToRemote::x", News: &structpb.Struct{},
	})
	if err == nil || !strings.Contains(err.Error(), "unsupported resource type") {
		t.Fatalf("want unsupported type error, got %v", err)
	}
}
