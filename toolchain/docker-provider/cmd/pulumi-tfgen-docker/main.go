// pulumi-tfgen-docker generates the Pulumi schema from the same ProviderInfo as the plugin.
// build.sh runs `pulumi-tfgen-docker schema --out DIR` and embeds DIR/schema.json.
package main

import (
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfgen"

	"agensh.local/docker-provider/provider"
)

func main() { tfgen.Main("docker", provider.Version, provider.Provider()) }
