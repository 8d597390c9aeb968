#!/usr/bin/env python3
"""List wire-name/shape mismatches between a generated schema.json and the pulumi_docker SDK.

Usage: check_wire_names.py SCHEMA_JSON [PATH_TO_pulumi_docker]
Static (AST) only: the SDK is not imported. For every SDK class that corresponds to a schema
resource/type we compare property wire names (@pulumi.getter(name=...)), required-ness of
inputs and the referenced nested types. Exit code 1 if anything differs.
"""
import ast, json, os, re, sys

schema = json.load(open(sys.argv[1]))
sdk = sys.argv[2] if len(sys.argv) > 2 else "/work/main/.venv/lib/python3.11/site-packages/pulumi_docker"
RESOURCES = ["container", "network", "volume", "remoteImage"]

def classes(path):
    """class name -> {wire name: annotation string}"""
    out = {}
    for node in ast.parse(open(path).read()).body:
        if not isinstance(node, ast.ClassDef):
            continue
        props = {}
        for fn in node.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            for d in fn.decorator_list:
                src = ast.unparse(d)
                if src.startswith("pulumi.getter"):
                    m = re.search(r'name=[\'"]([^\'"]+)', src)
                    props[m.group(1) if m else fn.name] = ast.unparse(fn.returns) if fn.returns else ""
        out[node.name] = props
    return out

py = {}
for f in ["container.py", "network.py", "volume.py", "remote_image.py", "_inputs.py", "outputs.py", "provider.py"]:
    py.update({(f, k): v for k, v in classes(os.path.join(sdk, f)).items()})
def pyclass(f, name):
    return py.get((f, name))

problems = []
def compare(where, sch_props, required, py_props, check_required):
    if py_props is None:
        problems.append(f"{where}: no SDK class"); return
    s, p = set(sch_props), set(py_props)
    for k in sorted(p - s): problems.append(f"{where}: SDK has '{k}', schema lacks it")
    for k in sorted(s - p): problems.append(f"{where}: schema has '{k}', SDK lacks it (extra, harmless)")
    for k in sorted(s & p):
        ann, sp = py_props[k], sch_props[k]
        ref = sp.get("$ref") or sp.get("items", {}).get("$ref") or ""
        if ref:
            tname = ref.rsplit(":", 1)[-1]
            if tname not in ann:
                problems.append(f"{where}.{k}: schema refs {tname}, SDK annotation {ann}")
        is_list = sp.get("type") == "array"
        if is_list != ("Sequence" in ann):
            problems.append(f"{where}.{k}: list-ness differs (schema {sp.get('type')}, SDK {ann})")
        if check_required and (k in required) != ("Optional[" not in ann):
            problems.append(f"{where}.{k}: required-ness differs (schema {'req' if k in required else 'opt'}, SDK {ann})")

files = {"container": "container.py", "network": "network.py", "volume": "volume.py", "remoteImage": "remote_image.py"}
seen_types = set()
def collect_refs(props):
    for sp in props.values():
        for r in (sp.get("$ref"), sp.get("items", {}).get("$ref"), sp.get("additionalProperties", {}).get("$ref")):
            if r and r.startswith("#/types/"):
                seen_types.add(r[len("#/types/"):])

for r in RESOURCES:
    tok = f"docker:index/{r}:{r[0].upper()}{r[1:]}"
    res = schema["resources"].get(tok)
    if res is None:
        problems.append(f"{tok}: missing from schema"); continue
    cls = tok.rsplit(":", 1)[1]
    compare(f"{cls}Args", res["inputProperties"], set(res.get("requiredInputs", [])), pyclass(files[r], f"{cls}Args"), True)
    compare(f"{cls}(outputs)", res["properties"], set(), pyclass(files[r], cls), False)
    compare(f"_{cls}State", res["stateInputs"]["properties"], set(), pyclass(files[r], f"_{cls}State"), False)
    collect_refs(res["inputProperties"]); collect_refs(res["properties"])

while True:  # transitive closure of nested object types
    before = set(seen_types)
    for t in before:
        collect_refs(schema["types"][t].get("properties", {}))
    if seen_types == before:
        break
for t in sorted(seen_types):
    typ = schema["types"][t]; name = t.rsplit(":", 1)[1]
    compare(f"{name}Args", typ["properties"], set(typ.get("required", [])), pyclass("_inputs.py", f"{name}Args"), True)
    compare(f"{name}(output)", typ["properties"], set(), pyclass("outputs.py", name), False)

prov = schema["provider"]
compare("ProviderArgs", prov["inputProperties"], set(prov.get("requiredInputs", [])), pyclass("provider.py", "ProviderArgs"), True)
for p in sorted(set(schema["config"]["variables"]) - set(prov["inputProperties"])):
    problems.append(f"config: docker:{p} not a provider input")

vars_src = open(os.path.join(sdk, "config", "vars.py")).read()
cfg_sdk = set(re.findall(r"__config__\.get\w*\('([^']+)'\)", vars_src))
for p in sorted(cfg_sdk - set(schema["config"]["variables"])):
    problems.append(f"config: SDK reads docker:{p}, schema lacks it")
for p in sorted(set(schema["config"]["variables"]) - cfg_sdk):
    problems.append(f"config: schema has docker:{p}, SDK lacks it (extra, harmless)")

errs = [p for p in problems if "harmless" not in p]
print("\n".join(problems) or "no differences")
print(f"{len(errs)} mismatches, {len(problems) - len(errs)} harmless extras")
sys.exit(1 if errs else 0)
