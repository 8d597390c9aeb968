package main

import (
	"fmt"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/types/known/structpb"
)

// Resource and function tokens, as used by the Python SDK.
const (
	tokLocalCommand  = "command:local:Command"
	tokRemoteCommand = "command:remote:Command"
	tokLocalRun      = "command:local:run"
)

// outputOnlyKeys are computed by the provider, never set by the program; they
// are dropped when state is compared with inputs.
var outputOnlyKeys = map[resource.PropertyKey]bool{
	"stdout": true, "stderr": true, "assets": true, "archive": true,
}

// noRunKeys may change without re-running anything: they only matter for a
// later delete, or for how output is logged.
var noRunKeys = map[resource.PropertyKey]bool{
	"delete": true, "logging": true,
}

// wireOpts keeps unknowns and secrets so that previews and secret-ness survive
// a round trip through the provider unchanged.
var wireOpts = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, SkipNulls: true}

func unmarshal(s *structpb.Struct) (resource.PropertyMap, error) {
	if s == nil {
		return resource.PropertyMap{}, nil
	}
	return plugin.UnmarshalProperties(s, wireOpts)
}

// unmarshal3 decodes the olds, old inputs and news of a Diff or Update request.
func unmarshal3(olds, oldInputs, news *structpb.Struct) (o, oi, n resource.PropertyMap, err error) {
	if o, err = unmarshal(olds); err != nil {
		return
	}
	if oi, err = unmarshal(oldInputs); err != nil {
		return
	}
	n, err = unmarshal(news)
	return
}

func marshal(pm resource.PropertyMap) (*structpb.Struct, error) {
	return plugin.MarshalProperties(pm, wireOpts)
}

// unsecret strips secret wrappers recursively; the provider needs plain values
// to run commands, and compares plain values to decide whether to run.
func unsecret(v resource.PropertyValue) resource.PropertyValue {
	switch {
	case v.IsSecret():
		return unsecret(v.SecretValue().Element)
	case v.IsArray():
		arr := make([]resource.PropertyValue, len(v.ArrayValue()))
		for i, e := range v.ArrayValue() {
			arr[i] = unsecret(e)
		}
		return resource.NewArrayProperty(arr)
	case v.IsObject():
		return resource.NewObjectProperty(unsecretMap(v.ObjectValue()))
	}
	return v
}

func unsecretMap(pm resource.PropertyMap) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range pm {
		out[k] = unsecret(v)
	}
	return out
}

// inputsOf drops the provider-computed keys from a state map.
func inputsOf(state resource.PropertyMap) resource.PropertyMap {
	out := resource.PropertyMap{}
	for k, v := range state {
		if !outputOnlyKeys[k] {
			out[k] = v
		}
	}
	return out
}

// changedKeys lists the top-level input keys whose values differ. A null and
// a missing value count as equal. With plain=true secret-ness is ignored.
func changedKeys(olds, news resource.PropertyMap, ignore []string, plain bool) []resource.PropertyKey {
	skip := map[resource.PropertyKey]bool{}
	for _, k := range ignore {
		skip[resource.PropertyKey(k)] = true
	}
	keys := map[resource.PropertyKey]bool{}
	for k := range olds {
		keys[k] = true
	}
	for k := range news {
		keys[k] = true
	}
	var out []resource.PropertyKey
	for k := range keys {
		if outputOnlyKeys[k] || skip[k] {
			continue
		}
		o, n := olds[k], news[k]
		if plain {
			o, n = unsecret(o), unsecret(n)
		}
		if !o.HasValue() && !n.HasValue() {
			continue
		}
		if !o.DeepEquals(n) {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Typed readers over an unsecreted map. Unknown values read as absent; they
// only occur during preview, where nothing is run.

func getString(pm resource.PropertyMap, key string) string {
	if v := pm[resource.PropertyKey(key)]; v.IsString() {
		return v.StringValue()
	}
	return ""
}

func getBool(pm resource.PropertyMap, key string, def bool) bool {
	if v := pm[resource.PropertyKey(key)]; v.IsBool() {
		return v.BoolValue()
	}
	return def
}

func getNumber(pm resource.PropertyMap, key string, def float64) float64 {
	if v := pm[resource.PropertyKey(key)]; v.IsNumber() {
		return v.NumberValue()
	}
	return def
}

func getStrings(pm resource.PropertyMap, key string) []string {
	v := pm[resource.PropertyKey(key)]
	if !v.IsArray() {
		return nil
	}
	var out []string
	for _, e := range v.ArrayValue() {
		if e.IsString() {
			out = append(out, e.StringValue())
		}
	}
	return out
}

func getStringMap(pm resource.PropertyMap, key string) map[string]string {
	v := pm[resource.PropertyKey(key)]
	if !v.IsObject() {
		return nil
	}
	out := map[string]string{}
	for k, e := range v.ObjectValue() {
		switch {
		case e.IsString():
			out[string(k)] = e.StringValue()
		case e.HasValue() && !e.IsComputed():
			out[string(k)] = fmt.Sprint(e.V)
		}
	}
	return out
}

func getObject(pm resource.PropertyMap, key string) resource.PropertyMap {
	if v := pm[resource.PropertyKey(key)]; v.IsObject() {
		return v.ObjectValue()
	}
	return nil
}
