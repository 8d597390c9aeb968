// pulumi-resource-docker is the bridged Pulumi resource plugin.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"

	"agensh.local/docker-provider/provider"
)

// Written by build.sh from the tfgen output; not committed (see .gitignore).
//
//go:embed schema-embed.json
var schema []byte

func main() { tfbridge.Main("docker", provider.Version, provider.Provider(), schema) }
