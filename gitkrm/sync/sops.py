"""SOPS files decrypted in memory, natively: age (pyrage) for the data key, AES-GCM
(cryptography) for the values, the MAC checked, following the SOPS format.

Chosen by measurement over running the `sops` binary per file (benchmarks/bench_sops.py:
the binary costs a process start, tens of milliseconds, per file; natively a file costs
about 0.1 ms for its data key and microseconds per value). Tests encrypt their fixtures
with the real `sops` and `age-keygen`, so the format is the real one.

What SOPS does and this module repeats: the tree is walked in file order; a value is
encrypted when the metadata's rules say so (`unencrypted_suffix`, `encrypted_suffix`,
`unencrypted_regex`, `encrypted_regex`; with comment-based rules, a value counts as
encrypted when it is an `ENC[...]` string); each is AES-256-GCM with the path of its keys
(`a:b:`) as additional data, typed (`str`, `int`, `float`, `bool`, `bytes`); the MAC is
SHA-512 over every value in order (only the encrypted ones with `mac_only_encrypted`),
upper-case hex, stored encrypted with the `lastmodified` time as additional data.
Unencrypted YAML scalars are typed as yaml.v3 types them (what SOPS and Flux read with).
Comments are not part of the MAC and are dropped. Age keys only (PGP, KMS and Vault keys
need services gitkrm does not talk to); Shamir key groups are not supported.

Every decrypted string is registered with `krm.masking` before it is returned.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gitkrm.krm import masking


class SopsError(ValueError):
    """A file that can't be decrypted: no usable key, a bad MAC, a malformed value."""


class Format(StrEnum):
    YAML = "yaml"
    JSON = "json"
    DOTENV = "dotenv"
    BINARY = "binary"
    INI = "ini"


MARKERS: Final = {  # what Flux looks for to call content SOPS-encrypted
    Format.YAML: b"mac: ENC[",
    Format.JSON: b'"mac": "ENC[',
    Format.DOTENV: b"sops_mac=ENC[",
}
_ENC: Final = re.compile(
    r"^ENC\[AES256_GCM,data:(?P<data>[^,]*),iv:(?P<iv>[^,]+),tag:(?P<tag>[^,]+),"
    r"type:(?P<type>[^\]]+)\]$"
)
_MAC_ONLY_INIT: Final = bytes.fromhex(  # sops.MACOnlyEncryptedInitialization
    "8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69"
)
_FLOAT: Final = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INT: Final = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_NULLS: Final = frozenset({"", "~", "null", "Null", "NULL"})
_BOOLS: Final = {"true": True, "True": True, "TRUE": True, "false": False, "False": False}
_BOOLS_FALSE: Final = frozenset({"FALSE"})
_SPECIAL_FLOATS: Final = {
    **dict.fromkeys([".nan", ".NaN", ".NAN"], math.nan),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], -math.inf),
}


def format_for_path(path: str) -> Format:
    """SOPS's format of a file by its name (Flux: `.dockerconfigjson` is JSON)."""
    if path.endswith((".yaml", ".yml")):
        return Format.YAML
    if path.endswith((".json", ".dockerconfigjson")):
        return Format.JSON
    if path.endswith(".env"):
        return Format.DOTENV
    if path.endswith(".ini"):
        return Format.INI
    return Format.BINARY


def encrypted_format(data: bytes) -> Format | None:
    """The format of SOPS-encrypted content, from its MAC line (None: not encrypted)."""
    for fmt, marker in MARKERS.items():
        if marker in data:
            return fmt
    return None


# -- YAML as yaml.v3 types it ------------------------------------------------------


class _Loader(yaml.CSafeLoader):
    """libyaml composes; plain scalars are typed here as yaml.v3 types them."""

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is ScalarNode:
            return "plain" if implicit[0] else "str"
        return "map" if kind is MappingNode else "seq"


def _v3_scalar(text: str) -> Any:
    """A plain scalar as yaml.v3 decodes it into interface{} (timestamps stay strings)."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _BOOLS_FALSE:
        return False
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    first = text[0]
    if not (first.isdigit() or first in "+-."):
        return text
    plain = text.replace("_", "")
    if _INT.match(plain):
        sign = -1 if plain[0] == "-" else 1
        digits = plain.lstrip("+-")
        base = 10
        if digits[:2] in ("0x", "0X"):
            base, digits = 16, digits[2:]
        elif digits[:2] in ("0o", "0O"):
            base, digits = 8, digits[2:]
        elif digits[:2] in ("0b", "0B"):
            base, digits = 2, digits[2:]
        elif len(digits) > 1 and digits[0] == "0":
            base = 8
        value = sign * int(digits, base)
        if -(2**63) <= value < 2**64:
            return value
    if _FLOAT.match(plain):
        return float(plain)
    return text


def _yaml_value(node: Node) -> Any:
    if isinstance(node, MappingNode):
        return {str(k.value): _yaml_value(v) for k, v in node.value}
    if isinstance(node, SequenceNode):
        return [_yaml_value(v) for v in node.value]
    return _v3_scalar(node.value) if node.tag == "plain" else node.value


def load_yaml(text: str) -> Any:
    node = yaml.compose(text, Loader=_Loader)
    return None if node is None else _yaml_value(node)


# -- the tree ------------------------------------------------------------------------


def _go_float(f: float) -> str:
    """strconv.FormatFloat(f, 'f', -1, 64)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    s = format(Decimal(repr(f)), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _to_bytes(v: Any) -> bytes:
    """SOPS's ToBytes: what a value adds to the MAC."""
    if isinstance(v, bool):
        return b"True" if v else b"False"
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    if isinstance(v, bytes):
        return v
    if isinstance(v, int):
        return str(v).encode()
    if isinstance(v, float):
        return _go_float(v).encode()
    raise SopsError(f"can't read a value of type {type(v).__name__}")


class _Meta:
    """The `sops` metadata of a file."""

    def __init__(self, m: dict[str, Any]) -> None:
        self.age = [
            (str(a.get("recipient", "")), str(a.get("enc", "")))
            for a in m.get("age") or ()
            if isinstance(a, dict)
        ]
        self.others = sorted(
            k for k in ("pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "key_groups") if m.get(k)
        )
        self.lastmodified = str(m.get("lastmodified") or "")
        self.mac = m.get("mac")
        self.unencrypted_suffix = m.get("unencrypted_suffix") or ""
        self.encrypted_suffix = m.get("encrypted_suffix") or ""
        self.unencrypted_regex = m.get("unencrypted_regex") or ""
        self.encrypted_regex = m.get("encrypted_regex") or ""
        self.by_comment = bool(
            m.get("unencrypted_comment_regex") or m.get("encrypted_comment_regex")
        )
        flag = m.get("mac_only_encrypted")
        self.mac_only = flag is True or str(flag).lower() == "true"

    def should_encrypt(self, path: Sequence[str], value: Any) -> bool:
        if self.by_comment:
            return isinstance(value, str) and value.startswith("ENC[")
        encrypted = True
        if self.unencrypted_suffix and any(p.endswith(self.unencrypted_suffix) for p in path):
            encrypted = False
        if self.encrypted_suffix:
            encrypted = any(p.endswith(self.encrypted_suffix) for p in path)
        if self.unencrypted_regex and any(re.search(self.unencrypted_regex, p) for p in path):
            encrypted = False
        if self.encrypted_regex:
            encrypted = any(re.search(self.encrypted_regex, p) for p in path)
        return encrypted


@lru_cache(maxsize=16)
def _identities(keys: tuple[str, ...]) -> list[Any]:
    from pyrage import x25519  # type: ignore[import-untyped]  # when something is decrypted

    out = []
    for k in keys:
        try:
            out.append(x25519.Identity.from_str(k))
        except Exception:  # pyrage.IdentityError: a malformed key counts as none
            continue
    return out


def _data_key(meta: _Meta, keys: Sequence[str]) -> bytes:
    import pyrage

    identities = _identities(tuple(keys))
    if not meta.age:
        others = f" (it has {', '.join(meta.others)} keys only)" if meta.others else ""
        raise SopsError(f"not encrypted for any age key{others}: gitkrm decrypts with age keys")
    if identities:
        for _, enc in meta.age:
            try:
                key: bytes = pyrage.decrypt(enc.encode(), identities)
            except Exception:  # pyrage.DecryptError: not for these keys
                continue
            if len(key) == 32:
                return key
    recipients = ", ".join(r for r, _ in meta.age)
    have = (
        "no age key was given"
        if not identities
        else f"none of the {len(identities)} age key(s) given decrypts it"
    )
    raise SopsError(f"no usable key: encrypted for {recipients}; {have}")


def _decrypt(value: str, key: bytes, aad: str) -> Any:
    if value == "":
        return ""
    m = _ENC.match(value)
    if m is None:
        raise SopsError(f"value at {aad or '/'} is not a SOPS-encrypted value")
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    try:
        data, iv, tag = (base64.b64decode(m[g]) for g in ("data", "iv", "tag"))
        plain = AESGCM(key).decrypt(iv, data + tag, aad.encode())
    except (binascii.Error, ValueError, InvalidTag):
        raise SopsError(f"value at {aad or '/'} does not decrypt (tampered or damaged)") from None
    kind = m["type"]
    text = plain.decode("utf-8", "surrogateescape")
    try:
        if kind == "str":
            return text
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            return text.lower() in ("true", "1", "t")
        if kind == "bytes":
            return plain
    except ValueError:
        raise SopsError(f"value at {aad or '/'} is not a {kind}") from None
    raise SopsError(f"value at {aad or '/'} has an unsupported type {kind!r}")


def _go_time_text(lastmodified: str) -> str:
    """The `lastmodified` time as SOPS formats it for the MAC (RFC 3339, whole seconds)."""
    return re.sub(r"(T\d\d:\d\d:\d\d)\.\d+", r"\1", lastmodified)


_IDENTITY: Final = frozenset({"apiVersion", "kind", "metadata", "type"})


def decrypt_tree(
    tree: dict[str, Any],
    meta_obj: Any,
    keys: Sequence[str],
    *,
    verify: bool = True,
    resource: bool = False,
) -> dict[str, Any]:
    """`tree` (without its `sops` key) decrypted and, when `verify`, its MAC checked.
    (Each encrypted value is authenticated with its path either way.) Decrypted values
    are masked from now on, except, in a `resource`, what names it (apiVersion, kind,
    metadata, type: a wholly encrypted Secret must not mask `default` everywhere)."""
    if not isinstance(meta_obj, dict):
        raise SopsError("the sops metadata is not a mapping")
    meta = _Meta(meta_obj)
    if not isinstance(meta.mac, str) or not meta.mac:
        raise SopsError("no MAC in the sops metadata")
    key = _data_key(meta, keys)
    digest = hashlib.sha512()
    if meta.mac_only:
        digest.update(_MAC_ONLY_INIT)
    secrets: list[str] = []

    def leaf(value: Any, path: list[str]) -> Any:
        encrypted = meta.should_encrypt(path, value)
        if encrypted:
            if not isinstance(value, str):
                raise SopsError(f"value at {':'.join(path)} should be encrypted and is not")
            value = _decrypt(value, key, ":".join(path) + ":")
            if resource and path and path[0] in _IDENTITY:
                pass
            elif isinstance(value, str):
                secrets.append(value)
            elif isinstance(value, bytes):
                secrets.append(value.decode("utf-8", "replace"))
        if value is not None and (encrypted or not meta.mac_only):
            digest.update(_to_bytes(value))
        return value

    out = _walk(tree, [], leaf)
    masking.remember(secrets)
    if not verify:
        assert isinstance(out, dict)
        return out
    stored = _decrypt(meta.mac, key, _go_time_text(meta.lastmodified))
    if not isinstance(stored, str) or not hmac.compare_digest(
        stored.encode(), digest.hexdigest().upper().encode()
    ):
        raise SopsError("MAC mismatch: the file was changed after it was encrypted")
    assert isinstance(out, dict)
    return out


def _walk(value: Any, path: list[str], leaf: Callable[[Any, list[str]], Any]) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, [*path, str(k)], leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, path, leaf) for v in value]
    if value is None:
        return None
    return leaf(value, path)


# -- documents and files -------------------------------------------------------------


def is_encrypted_resource(obj: Any) -> bool:
    """Flux's test: a top-level `sops` mapping with a `mac`."""
    return isinstance(obj, dict) and isinstance(obj.get("sops"), dict) and "mac" in obj["sops"]


def decrypt_document(
    text: str, *, json_text: bool, keys: Sequence[str], verify: bool = True
) -> dict[str, Any] | None:
    """One manifest (a YAML document, or a JSON file) decrypted; None when it carries no
    SOPS metadata. `verify` False: the MAC is not checked (a kustomize build added fields;
    the file it came from was checked before the build)."""
    try:
        tree = json.loads(text) if json_text else load_yaml(text)
    except (ValueError, yaml.YAMLError) as e:
        raise SopsError(f"can't be read: {e}") from None
    if not is_encrypted_resource(tree):
        return None
    meta = tree.pop("sops")
    return decrypt_tree(tree, meta, keys, verify=verify, resource=True)


def _dotenv_tree(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    tree: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    ages: dict[int, dict[str, str]] = {}
    for raw in data.split(b"\n"):
        if not raw or raw.startswith(b"#"):
            continue
        line = raw.decode("utf-8", "surrogateescape")
        key, sep, value = line.partition("=")
        if not sep:
            raise SopsError(f"invalid dotenv line {key[:40]!r}")
        value = value.replace("\\n", "\n")
        if key.startswith("sops_"):
            name = key[len("sops_") :]
            m = re.match(r"^age__list_(\d+)__map_(\w+)$", name)
            if m:
                ages.setdefault(int(m[1]), {})[m[2]] = value
            else:
                meta[name] = value
        else:
            tree[key] = value
    meta["age"] = [ages[i] for i in sorted(ages)]
    return tree, meta


def _go_json(v: Any) -> Any:
    """JSON numbers as Go writes float64s: integral ones without a fraction."""
    if isinstance(v, dict):
        return {k: _go_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_go_json(x) for x in v]
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return int(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


def _emit(tree: dict[str, Any], fmt: Format) -> bytes:
    if fmt is Format.DOTENV:
        lines = []
        for k, v in tree.items():
            if isinstance(v, dict | list):
                raise SopsError(f"can't write the nested value of {k!r} as a dotenv file")
            text = v if isinstance(v, str) else _go_float(v) if isinstance(v, float) else str(v)
            lines.append(f"{k}={text.replace(chr(10), chr(92) + 'n')}\n")
        return "".join(lines).encode()
    if fmt is Format.JSON:
        return json.dumps(_go_json(tree), indent=4, ensure_ascii=False).encode() + b"\n"
    if fmt is Format.YAML:
        return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, indent=4).encode()
    data = tree.get("data", "")
    return data if isinstance(data, bytes) else str(data).encode("utf-8", "surrogateescape")


def decrypt_file(data: bytes, *, fmt: Format, out: Format, keys: Sequence[str]) -> bytes:
    """A whole SOPS-encrypted file (an env file, a JSON or YAML file, a binary file)
    decrypted and written in format `out`."""
    if fmt is Format.INI:
        raise SopsError("INI files are not supported")
    try:
        if fmt is Format.DOTENV:
            tree, meta = _dotenv_tree(data)
        else:
            text = data.decode("utf-8", "surrogateescape")
            loaded = json.loads(text) if fmt in (Format.JSON, Format.BINARY) else load_yaml(text)
            if not is_encrypted_resource(loaded):
                raise SopsError("no sops metadata with a MAC")
            meta = loaded.pop("sops")
            tree = loaded
    except (ValueError, yaml.YAMLError) as e:
        raise SopsError(f"can't be read as {fmt}: {e}") from None
    plain = decrypt_tree(tree, meta, keys)
    if fmt is Format.BINARY:
        out = Format.BINARY
    return _emit(plain, out)
