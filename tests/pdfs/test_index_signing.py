"""The signed envelope of index blobs (``index_signing.py``): a round trip, key rotation, and
every blob that must not be believed (another PDF's, another version's, a wrong or unknown key,
unsigned, truncated, garbage); then the key setting, which never shows a secret."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from app.alignment.index import INDEX_VERSION, DocumentIndex
from app.core.config import ConfigurationError, Settings, get_settings
from app.pdfs.extract import build_index
from app.pdfs.index_codec import decode_index, encode_index
from app.pdfs.index_signing import (
    REASONS,
    Binding,
    RejectedBlob,
    SigningKey,
    SigningKeys,
    open_blob,
    seal,
)
from tests.fixtures.pdfs import write_text_pdf
from tests.pdfs.test_index_codec import assert_same_index

SHA = "ab" * 32
OTHER_SHA = "cd" * 32
OLD = SigningKey("2026-05", b"old-secret-of-thirty-two-characters!")
NEW = SigningKey("2026-11", b"new-secret-of-thirty-two-characters!")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> DocumentIndex:
    path = tmp_path_factory.mktemp("signing") / "ferry.pdf"
    return build_index(write_text_pdf(path, ["The ferry leaves at seven.", "Tickets cost two."]))


@pytest.fixture(scope="module")
def payload(index: DocumentIndex) -> bytes:
    return encode_index(index)


def _reason(blob: bytes, binding: Binding | None = None, keys: SigningKeys | None = None) -> str:
    with pytest.raises(RejectedBlob) as rejected:
        open_blob(blob, binding or Binding(SHA), keys if keys is not None else SigningKeys([NEW]))
    assert rejected.value.reason in REASONS
    return rejected.value.reason


def test_round_trip(index: DocumentIndex, payload: bytes) -> None:
    blob = seal(payload, Binding(SHA), NEW)
    opened = open_blob(blob, Binding(SHA), SigningKeys([NEW]))
    assert (bytes(opened.payload), opened.key_id) == (payload, NEW.key_id)
    assert_same_index(index, decode_index(opened.payload))
    # With OCR settings in the binding too.
    ocr = Binding(SHA, "ocr0123456789ab")
    assert bytes(open_blob(seal(payload, ocr, NEW), ocr, SigningKeys([NEW])).payload) == payload


def test_rotation_the_new_key_signs_and_the_old_one_still_verifies(payload: bytes) -> None:
    rotating = SigningKeys([NEW, OLD])  # the new key added first
    assert rotating.current == NEW
    signed_before = seal(payload, Binding(SHA), OLD)
    assert open_blob(signed_before, Binding(SHA), rotating).key_id == OLD.key_id
    signed_now = seal(payload, Binding(SHA), rotating.current)
    assert open_blob(signed_now, Binding(SHA), rotating).key_id == NEW.key_id
    # The old key dropped: what it signed is no longer believed, what the new one signed is.
    assert _reason(signed_before, keys=SigningKeys([NEW])) == "unknown_key"
    assert open_blob(signed_now, Binding(SHA), SigningKeys([NEW])).key_id == NEW.key_id
    # Before the rotation reached a replica: the new key's blobs are unknown to it.
    assert _reason(signed_now, keys=SigningKeys([OLD])) == "unknown_key"


def test_another_pdfs_index_is_refused_though_signed(payload: bytes) -> None:
    assert _reason(seal(payload, Binding(OTHER_SHA), NEW)) == "wrong_pdf"
    assert _reason(seal(payload, Binding(SHA, "ocr0123456789ab"), NEW)) == "wrong_version"
    assert _reason(seal(payload, Binding(SHA), NEW), Binding(SHA, "ocr0123456789ab")) == (
        "wrong_version"
    )


def test_another_index_version_is_refused(payload: bytes) -> None:
    blob = bytearray(seal(payload, Binding(SHA), None))
    at = 10 + 32  # unsigned: no key id
    assert int.from_bytes(blob[at : at + 2], "little") == INDEX_VERSION
    blob[at : at + 2] = (INDEX_VERSION + 1).to_bytes(2, "little")
    assert _reason(bytes(blob), keys=SigningKeys()) == "unsigned"
    with pytest.raises(RejectedBlob, match="version") as rejected:
        open_blob(bytes(blob), Binding(SHA), SigningKeys(), verify=False)
    assert rejected.value.reason == "wrong_version"


def test_a_wrong_key_or_none_is_refused(payload: bytes) -> None:
    same_id_other_secret = SigningKey(NEW.key_id, b"a guess of thirty-two characters!!!!")
    assert _reason(seal(payload, Binding(SHA), same_id_other_secret)) == "bad_mac"
    assert _reason(seal(payload, Binding(SHA), SigningKey("mine", NEW.secret))) == "unknown_key"
    assert _reason(seal(payload, Binding(SHA), None)) == "unsigned"
    assert _reason(payload) == "unsigned"  # the codec's bytes without an envelope
    # Unverified (the private folder without keys): unsigned is read, the binding still checked.
    unsigned = seal(payload, Binding(SHA), None)
    assert bytes(open_blob(unsigned, Binding(SHA), SigningKeys(), verify=False).payload) == payload
    with pytest.raises(RejectedBlob):
        open_blob(unsigned, Binding(OTHER_SHA), SigningKeys(), verify=False)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_byte_is_refused(payload: bytes, data: st.DataObject) -> None:
    blob = seal(payload, Binding(SHA), NEW)
    at = data.draw(st.integers(0, len(blob) - 1))
    flip = data.draw(st.integers(1, 255))
    changed = blob[:at] + bytes([blob[at] ^ flip]) + blob[at + 1 :]
    _reason(changed)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_truncated_and_garbage_blobs_are_refused(payload: bytes, data: st.DataObject) -> None:
    blob = seal(payload, Binding(SHA), NEW)
    cut = data.draw(st.integers(0, len(blob) - 1))
    _reason(blob[:cut])
    garbage = data.draw(st.binary(max_size=512))
    assert _reason(garbage) in ("corrupt", "unsigned", "wrong_version")
    # Unverified too: a truncated unsigned blob is never taken for an index.
    unsigned = seal(payload, Binding(SHA), None)
    cut = data.draw(st.integers(0, len(unsigned) - 1))
    try:
        opened = open_blob(unsigned[:cut], Binding(SHA), SigningKeys(), verify=False)
    except RejectedBlob:
        return
    with pytest.raises(ValueError, match="not a usable index blob"):
        decode_index(opened.payload)


def test_keys_are_never_shown(payload: bytes) -> None:
    keys = SigningKeys.from_settings([SecretStr(f"{NEW.key_id}:{NEW.secret.decode()}")])
    assert keys.current == NEW
    shown = [repr(keys), repr(NEW), str(keys.current)]
    with pytest.raises(RejectedBlob) as rejected:
        open_blob(seal(payload, Binding(SHA), OLD), Binding(SHA), SigningKeys([NEW]))
    shown.append(str(rejected.value))
    for text in shown:
        assert NEW.secret.decode() not in text
        assert OLD.secret.decode() not in text
    assert NEW.key_id in repr(keys)


def test_the_setting_is_a_json_list_of_id_and_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    value = '["2026-11:new-secret-of-thirty-two-characters!", "2026-05:' + "o" * 40 + '"]'
    monkeypatch.setenv("HIGHLIGHT_INDEX_SIGNING_KEYS", value)
    loaded = Settings(_env_file=None).index_signing_keys
    assert [k.get_secret_value().split(":")[0] for k in loaded] == ["2026-11", "2026-05"]
    assert "secret" not in repr(Settings(_env_file=None))
    assert SigningKeys.from_settings(loaded).current == SigningKey(
        "2026-11", b"new-secret-of-thirty-two-characters!"
    )
    assert not SigningKeys.from_settings(Settings(_env_file=None).index_signing_keys[:0])


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('["k1:too-short-a-secret"]', "key 1 is not id:secret"),
        ('["k1:' + "s" * 40 + '", "no id at all, only a secret"]', "key 2 is not id:secret"),
        ('["k1:' + "s" * 40 + '", "k1:' + "t" * 40 + '"]', "two keys have the same id"),
        ('["k/1:' + "s" * 40 + '"]', "key 1 is not id:secret"),
    ],
)
def test_unusable_keys_stop_the_start_without_showing_them(
    monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv("HIGHLIGHT_INDEX_SIGNING_KEYS", value)
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError) as refused:
            get_settings()
    finally:
        get_settings.cache_clear()
    message = str(refused.value)
    assert message.startswith("HIGHLIGHT_INDEX_SIGNING_KEYS: "), message
    assert says in message
    for secret in ("too-short-a-secret", "s" * 40, "t" * 40, "only a secret"):
        assert secret not in message
