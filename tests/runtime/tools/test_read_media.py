"""read of pictures model APIs do not take (AVIF, HEIC/HEIF, BMP, TIFF): attached as WebP, as upstream does
(reference §4.3); useJpegForImages sends every picture as JPEG (reference §8.4). The fixtures in
tests/data/images are 16x8 pictures, red on the left half and blue on the right, written once with Pillow
and pillow-heif, so the tests do not depend on an encoder being present."""

from __future__ import annotations

import base64
import io
import shutil
import struct

import pytest
from PIL import Image

import cireil
from cireil.render import result_bundle
from cireil.runtime.config.engine_config import ModelConfig, ProviderConfig
from cireil.runtime.engine.openai import ModelRequest, build_request_body
from cireil.runtime.sessions.messages import user_message
from conftest import DATA
from readtools import reading_agent

IMAGES = DATA / "images"
RED, BLUE = (220, 20, 20), (20, 20, 220)


@pytest.fixture
def agent(tmp_path):
    return cireil.load(reading_agent(tmp_path))


def near(pixel: tuple, colour: tuple, slack: int = 40) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(pixel[:3], colour, strict=True))


def assert_halves(data: bytes, fmt: str) -> None:
    image = Image.open(io.BytesIO(data))
    assert image.format == fmt and image.size == (16, 8)
    rgb = image.convert("RGB")
    assert near(rgb.getpixel((1, 4)), RED) and near(rgb.getpixel((14, 4)), BLUE)


@pytest.mark.parametrize(
    ("fixture", "name", "media_type"),
    [
        ("halves.avif", "photo.avif", "image/avif"),
        ("halves.heic", "IMG_0001.HEIC", "image/heic"),
        ("halves.heif", "scan.heif", "image/heif"),
    ],
)
def test_avif_and_heif_are_pictures_sent_as_webp(agent, fixture, name, media_type):
    target = agent.directory / "workspace" / name
    shutil.copy(IMAGES / fixture, target)
    res = agent.call("read", path=f"/workspace/{name}")
    # the result names the file's own type, as upstream's does; the model gets WebP
    assert res.data == {
        "mediaType": media_type,
        "path": f"/workspace/{name}",
        "size": target.stat().st_size,
        "success": True,
        "type": "image",
    }
    [queued] = agent.session.pending_media
    assert queued["mediaType"] == "image/webp" and queued["type"] == "image"
    assert_halves(queued["data"], "WEBP")
    html = result_bundle(res)["text/html"]
    assert '<img src="data:image/webp;base64,' in html  # the notebook shows the picture the model gets


@pytest.mark.parametrize(("ext", "fmt"), [("bmp", "BMP"), ("tiff", "TIFF")])
def test_bmp_and_tiff_are_converted_too(agent, ext, fmt):
    image = Image.new("RGB", (16, 8), RED)
    image.paste(BLUE, (8, 0, 16, 8))
    image.save(agent.directory / "workspace" / f"pic.{ext}", format=fmt)
    assert agent.call("read", path=f"/workspace/pic.{ext}")["mediaType"] == f"image/{ext}"
    [queued] = agent.session.pending_media
    assert queued["mediaType"] == "image/webp"
    assert_halves(queued["data"], "WEBP")


def test_a_broken_heic_is_a_failed_result_and_nothing_is_queued(agent):
    (agent.directory / "workspace" / "bad.heic").write_bytes(b"\x00\x00\x00\x18ftypheic" + b"\x01" * 40)
    res = agent.call("read", path="/workspace/bad.heic")
    assert not res.success
    assert res["error"].startswith("'/workspace/bad.heic' cannot be decoded as image/heic: ")
    assert "complete picture" in res["hint"]
    assert agent.session.pending_media == []


def test_a_decompression_bomb_is_refused_before_decoding(agent):
    out = io.BytesIO()
    Image.new("RGB", (1, 1)).save(out, format="BMP")
    bomb = bytearray(out.getvalue())
    struct.pack_into("<ii", bomb, 18, 9000, 9000)  # the header claims 81 megapixels, in 58 bytes
    (agent.directory / "workspace" / "bomb.bmp").write_bytes(bytes(bomb))
    res = agent.call("read", path="/workspace/bomb.bmp")
    assert not res.success and "9000x9000 pixels, over the 64,000,000-pixel limit" in res["error"]


def _body(use_jpeg: bool, parts: list[dict]) -> dict:
    provider = ProviderConfig("p", api_base="http://127.0.0.1:9/v1", default_model="m", use_jpeg_for_images=use_jpeg)
    message = user_message("", parts=parts, media=True)
    return build_request_body(provider, ModelConfig(), ModelRequest("s", [message], [], "sid", "m"), stream=False)


def _urls(body: dict) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if m["role"] == "user" for p in m["content"]]


def test_use_jpeg_for_images_sends_every_picture_as_jpeg(agent):
    png = io.BytesIO()
    image = Image.new("RGBA", (16, 8), (*RED, 255))
    image.paste((*BLUE, 255), (8, 0, 16, 8))
    image.paste((0, 0, 0, 0), (0, 0, 2, 2))  # transparency, which JPEG lacks: shown on white
    image.save(png, format="PNG")
    shutil.copy(IMAGES / "halves.heic", agent.directory / "workspace" / "p.heic")
    agent.call("read", path="/workspace/p.heic")
    webp = agent.session.pending_media[0]["data"]
    parts = [
        {"type": "image", "mediaType": "image/png", "data": base64.b64encode(png.getvalue()).decode()},
        {"type": "image", "mediaType": "image/webp", "data": base64.b64encode(webp).decode()},
    ]
    plain = _urls(_body(False, parts))
    assert [u.split(";")[0] for u in plain] == ["data:image/png", "data:image/webp"]
    jpeg = _urls(_body(True, parts))
    assert [u.split(";")[0] for u in jpeg] == ["data:image/jpeg", "data:image/jpeg"]
    decoded = [base64.b64decode(u.split(",", 1)[1]) for u in jpeg]
    for data in decoded:
        assert_halves(data, "JPEG")
    assert near(Image.open(io.BytesIO(decoded[0])).getpixel((0, 0)), (255, 255, 255))
    assert _urls(_body(True, parts)) == jpeg  # the same bytes every request (converted once, remembered)


def test_a_heic_read_in_a_turn_reaches_the_model_as_webp(tmp_path):
    from cireil.testing.scripted_llm import ScriptedLLM, reply
    from turnkit import turn_agent

    with ScriptedLLM() as llm:
        agent = cireil.load(turn_agent(tmp_path, llm.base_url))
        try:
            shutil.copy(IMAGES / "halves.heic", agent.directory / "workspace" / "leaf.heic")
            llm.script(
                reply.tool_calls(("read", {"path": "/workspace/leaf.heic"})),
                reply.tool_calls(("respond", {"content": "a leaf"})),
            )
            agent.turn("look")
            second = llm.requests[1].body["messages"]
            urls = [
                p["image_url"]["url"] for m in second if m["role"] == "user" for p in m["content"] if "image_url" in p
            ]
            assert len(urls) == 1 and urls[0].startswith("data:image/webp;base64,")
            assert_halves(base64.b64decode(urls[0].split(",", 1)[1]), "WEBP")
        finally:
            agent.close()
