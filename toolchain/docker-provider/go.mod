module agensh.local/docker-provider

go 1.26.6

require (
	github.com/pulumi/pulumi-terraform-bridge/v3 v3.136.0
	github.com/terraform-providers/terraform-provider-docker v0.0.0
)

// build.sh copies the upstream module (github.com/kreuzwerker/terraform-provider-docker, which
// declares this module path) from the module cache into ./upstream and adds _shim/shim.go to it.
replace github.com/terraform-providers/terraform-provider-docker => ./upstream

// Replaces in dependencies are ignored, so repeat the bridge's own: it needs Pulumi's fork of
// the TF plugin SDK (the version its go.mod names).
replace github.com/hashicorp/terraform-plugin-sdk/v2 => github.com/pulumi/terraform-plugin-sdk/v2 v2.0.0-20260318212141-5525259d096b
