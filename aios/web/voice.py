"""``/api/voice/*``: speech to text (an upload or the microphone) and text to speech."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from aios.desktop.voice import (
    VoiceError,
    grammar_source,
    grammar_words,
    speaks_reply,
    speech_language,
    synthesize,
)
from aios.web.request import error, json_body, session, system, text_field

bp = Blueprint("voice", __name__, url_prefix="/api/voice")

VOICE_ERROR_STATUS = 422
_RUN_FLAGS = ("1", "true")


def _language(asked: Any = None) -> str:
    return asked if isinstance(asked, str) and asked else system().config.default_voice


def _voice_session() -> str | None:
    # checked before any audio is decoded, like the body's session_id elsewhere
    return session({"session_id": request.args.get("session_id")})


def _heard(text: str, sid: str | None) -> Response:
    sys_ = system()
    out: dict[str, Any] = {"text": text, "speak": speaks_reply(sys_.config, spoken=True)}
    if request.args.get("run") in _RUN_FLAGS:
        out["result"] = sys_.controller.instruction(text, sid, spoken=True)
    return jsonify(out)


@bp.post("/transcribe")
def voice_transcribe() -> Response:
    sid = _voice_session()
    sys_ = system()
    try:
        text = sys_.recognizer.transcribe(
            request.get_data(cache=False),
            grammar_source(sys_.launcher.apps()),
            language=_language(request.args.get("lang")),
        )
    except VoiceError as e:
        return error(VOICE_ERROR_STATUS, str(e))
    return _heard(text, sid)


@bp.post("/listen")
def voice_listen() -> Response:
    sid = _voice_session()
    sys_ = system()
    try:
        text = sys_.recognizer.listen_once(
            grammar_source(sys_.launcher.apps()), language=_language()
        )
    except VoiceError as e:
        return error(VOICE_ERROR_STATUS, str(e))
    return _heard(text, sid)


@bp.post("/speak")
def voice_speak() -> Response:
    body = json_body()
    text = text_field(body, "text", "")
    language = speech_language(text, _language(body.get("lang")))
    try:
        wav = synthesize(text, language=language, config=system().config)
    except VoiceError as e:
        return error(VOICE_ERROR_STATUS, str(e))
    return Response(wav, mimetype="audio/wav")


@bp.get("/status")
def voice_status() -> Response:
    sys_ = system()
    source = grammar_source(sys_.launcher.apps())
    return jsonify(
        {
            "stt": {"engine": sys_.recognizer.engine(), "commands": grammar_words(source)},
            "tts": {
                "engine": sys_.config.voice.tts_engine,
                "rate": sys_.config.voice_rate,
                "voice": sys_.config.voice.mandarin_voice,
            },
            "welcome": sys_.config.voice.welcome,
            "speak_replies": sys_.config.voice.speak_replies,
        }
    )
