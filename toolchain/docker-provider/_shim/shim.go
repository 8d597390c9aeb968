// Package shim exposes the upstream TF provider's internal constructor to the Pulumi bridge
// (the equivalent of pulumi-docker's "Add shim.NewProvider" patch).
//
// This file is NOT compiled as part of agensh.local/docker-provider (Go ignores directories
// starting with "_"). build.sh copies it into the temporary copy of the upstream module as
// <upstream>/shim/shim.go, because only code inside that module may import its internal/ tree.
package shim

import (
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/terraform-providers/terraform-provider-docker/internal/provider"
)

// NewProvider returns the SDKv2 half of the upstream provider. docker_container, docker_network,
// docker_volume and docker_image all live there, so the plugin-framework half is not bridged.
func NewProvider() *schema.Provider { return provider.New("dev")() }
