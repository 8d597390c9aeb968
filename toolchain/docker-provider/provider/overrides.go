package provider

import "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"

// applyOverrides makes property names match pulumi_docker==5.2.0 on the wire. The bridge
// pluralizes TF list fields automatically; pulumi-docker pinned these three to their TF-ish
// singular names instead. Found with scripts/check_wire_names.py (run by build.sh).
func applyOverrides(info *tfbridge.ProviderInfo) {
	field(info.Resources["docker_container"], "command", "command")                    // not "commands"
	field(info.Resources["docker_container"], "networks_advanced", "networksAdvanced") // not "networksAdvanceds"
	info.Config["registry_auth"] = &tfbridge.SchemaInfo{Name: "registryAuth"}          // not "registryAuths"
}

func field(r *tfbridge.ResourceInfo, tf, pulumi string) {
	if r.Fields == nil {
		r.Fields = map[string]*tfbridge.SchemaInfo{}
	}
	r.Fields[tf] = &tfbridge.SchemaInfo{Name: pulumi}
}
