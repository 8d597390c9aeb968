// Package provider holds the bridge configuration (ProviderInfo) shared by the schema
// generator (cmd/pulumi-tfgen-docker) and the plugin (cmd/pulumi-resource-docker), so the
// embedded schema and the runtime mapping can never disagree.
package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	shim "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim"
	shimv2 "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim/sdk-v2"

	// Exists only in the build-time copy of the upstream module (see _shim/ and build.sh).
	upstreamshim "github.com/terraform-providers/terraform-provider-docker/shim"
)

// Version is stamped by build.sh via -ldflags; it must equal the Python SDK's plugin version
// (pulumi_docker/pulumi-plugin.json) because the SDK asks the engine for exactly that version.
var Version = "5.2.0"

// Only these TF resources are bridged; everything else the upstream offers is ignored.
var resources = map[string]string{
	"docker_container": "Container",
	"docker_network":   "Network",
	"docker_volume":    "Volume",
	"docker_image":     "RemoteImage", // pulumi-docker's name; "Image" is its native (non-TF) resource
}

// Provider returns the ProviderInfo for the docker package.
func Provider() tfbridge.ProviderInfo {
	tf := upstreamshim.NewProvider()
	fixSchema(tf)
	p := shimv2.NewProvider(tf)

	info := tfbridge.ProviderInfo{
		P:           p,
		Name:        "docker",
		Version:     Version,
		DisplayName: "Docker",
		Publisher:   "agensh",
		// tfgen takes descriptions from the upstream docs/; build.sh runs it next to ./upstream.
		UpstreamRepoPath: "./upstream",
		Config: map[string]*tfbridge.SchemaInfo{
			// TF marks host Required with a DefaultFunc (DOCKER_HOST or the local socket). The
			// Python SDK treats it as optional with a DOCKER_HOST env default; mirror that so the
			// bridge does not demand `docker:host` (TF's DefaultFunc still fills it in).
			"host": {Default: &tfbridge.DefaultInfo{EnvVars: []string{"DOCKER_HOST"}}},
		},
		Resources: map[string]*tfbridge.ResourceInfo{},
		// Wire-name overrides (schema name vs. pulumi_docker==5.2.0) are applied in overrides.go.
	}
	for tf, name := range resources {
		info.Resources[tf] = &tfbridge.ResourceInfo{Tok: tfbridge.MakeResource("docker", "index", name)}
	}
	// tfgen fails on unmapped TF resources/data sources; list the ones we deliberately skip.
	p.ResourcesMap().Range(func(k string, _ shim.Resource) bool {
		if _, ok := resources[k]; !ok {
			info.IgnoreMappings = append(info.IgnoreMappings, k)
		}
		return true
	})
	p.DataSourcesMap().Range(func(k string, _ shim.Resource) bool {
		info.IgnoreMappings = append(info.IgnoreMappings, k)
		return true
	})
	// docker_image's "name" is the image reference, not a label: pre-register it so
	// SetAutonaming (which skips fields that already have a SchemaInfo) leaves it required.
	info.Resources["docker_image"].Fields = map[string]*tfbridge.SchemaInfo{"name": {}}
	applyOverrides(&info)
	// Container/Network/Volume names are optional in the SDK: Pulumi auto-names them.
	info.SetAutonaming(255, "-")
	return info
}

// fixSchema patches upstream schema quirks that would show up as spurious diffs in Pulumi.
func fixSchema(p *schema.Provider) {
	// docker_container.memory_swap is Optional but not Computed, yet Read stores the engine's
	// value (Docker defaults it to 2x memory when memory is set). With memory set and
	// memory_swap unset every `pulumi up` then proposed "-memorySwap". Computed keeps the
	// read-back value when the program does not set it (same wire shape: it is an output anyway).
	ctr := p.ResourcesMap["docker_container"]
	ctr.Schema["memory_swap"].Computed = true

	// Consequence for in-place updates: Update sends the (kept) old memory_swap with the new
	// memory, and Docker rejects raising memory above it ("Minimum memoryswap limit should be
	// larger than memory limit", seen here with memory 96 -> 256). When the program leaves
	// memory_swap unset, send what Docker itself picks at create time: 2x memory.
	update := ctr.UpdateContext
	ctr.UpdateContext = func(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
		if d.HasChange("memory") && configIsNull(d, "memory_swap") {
			if m := d.Get("memory").(int); m > 0 {
				if err := d.Set("memory_swap", 2*m); err != nil {
					return diag.FromErr(err)
				}
			}
		}
		return update(ctx, d, meta)
	}
}

// configIsNull reports whether the program left the top-level attribute unset.
func configIsNull(d *schema.ResourceData, attr string) bool {
	rc := d.GetRawConfig()
	if rc.IsNull() || !rc.IsKnown() || !rc.Type().IsObjectType() || !rc.Type().HasAttribute(attr) {
		return false // no raw config available: keep upstream behaviour
	}
	return rc.GetAttr(attr).IsNull()
}
