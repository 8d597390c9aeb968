// Command pulumi-resource-command is a small resource provider that speaks the
// same wire protocol as the official pulumi-command provider (v1.2.1), so the
// PyPI `pulumi-command` SDK can drive it. See README.md for what it covers.
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is overridden at build time with -ldflags "-X main.version=...".
// It defaults to the SDK version we mirror so a plain `go build` still matches
// what the Python SDK asks the engine for.
var version = "1.2.1"

func main() {
	// provider.Main connects to the engine (argv[1]), serves gRPC and prints
	// the chosen port on stdout, as the plugin protocol requires.
	err := provider.Main("command", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newProvider(host), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
