"""Text that holds no secret and must come out of redaction unchanged: code and output that talk
about passwords, tokens and keys, git SHAs, UUIDs, package-lock hashes, and base64 image data as
transcripts carry it (an image block's ``data``, an ``openssl base64`` dump).

The images are real PNG and JPEG files made here (zlib-compressed pixels, a JPEG header), not
random text, so their base64 has the shape a screenshot's has.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
import textwrap
import uuid
import zlib

_rng = random.Random(4242)

CODE = [
    # Python
    "def get_api_key(self) -> str:\n    return self._api_key",
    'password = os.environ["DB_PASSWORD"]\ntoken = getpass()\nsecret: ${APP_SECRET}',
    "self.client_secret = client_secret\nself.api_key = api_key\nself.password = password",
    "max_tokens: 300\ninput_tokens=1234\nprimary_key=True\ntoken_count = 12345678",
    'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\nif token_count > max_tokens:',
    'api_key = settings.OPENAI_API_KEY\nheaders = {"Authorization": f"Bearer {token}"}',
    "secret_key = config.get('secret_key')\npassword_hash = bcrypt.hashpw(password, salt)",
    "class PasswordResetForm(forms.Form):\n    new_password = forms.CharField(widget=forms.PasswordInput)",
    # TypeScript / JavaScript
    "type DerivedKeypair = {\n  publicKey: Uint8Array;\n  privateKey: Uint8Array;\n};",
    "this.privateKey = privateKey;\nconst token = await getToken();\nrefreshToken = body?.refreshToken;",
    "headers: { Authorization: `Bearer ${accessToken}` },",
    "    private refreshTokenRepository: Repository<RefreshToken>,",
    "const apiKey = process.env.STRIPE_SECRET_KEY;\nif (!apiKey) throw new Error('missing key');",
    # Go, its test output
    'token, err := auth.NewToken(ctx, cfg.Secret)\nif err != nil { return "", err }',
    "=== RUN   TestFindMostRecentSession_FiltersByWorktree\n"
    "--- PASS: TestFindMostRecentSession_FiltersByWorktree (0.07s)",
    "--- PASS: TestParse2 (0.01s)\n--- FAIL: TestTokenRefresh3 (0.02s)\n"
    "PASS\nok  \tgithub.com/acme/app\t0.412s",
    # configuration that names secrets without holding them
    "jobs:\n  deploy:\n    secrets: inherit\n    env:\n      TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "database:\n  password: ${DB_PASSWORD}\n  user: app\n  password_file: /run/secrets/db",
    "OLDPWD=/home/dev/project\nPWD=/home/dev/project/src\nHOME=/home/dev\nTERM=xterm-256color",
    # commands and prose
    "docker login --password-stdin < token.txt; gh auth token --hostname github.com",
    "--password-stdin < file; --token-file ~/.tok",
    "the password policy is strict; rotate the key every token refresh",
    "Bearer authentication is described in RFC 6750; a one-token change fixed the key lookup",
    "Example: run pytest with --with-api-keys flag to include the live tests",
    "src/auth/token_store.py tests/test_password_reset.py docs/api-keys.md",
    # URLs that are not credentials
    "http://localhost:3000/@vite/client and https://registry.example.com:8443/packages/@scope/pkg",
    "https://github.com/acme/app/blob/main/src/auth.py#L10 git@github.com:acme/app.git",
    "https://example.com/search?page=2&sort=desc&key_id=5&auth_type=oauth2&signature_version=4",
    "https://docs.example.com/keyType=secp256k1&sigType=ecdsa",
    # ids the transcripts are full of
    '"requestId":"req_011CVBzr8HeMS2m4VwYAZ7Tb","type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9"',
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0MvXW4M4HTkxGl7d3cJnJ4C4p9F0b2pVyzYc1pTqA dev@laptop",
]


def _shas() -> list[str]:
    digests = [hashlib.sha1(str(n).encode()).hexdigest() for n in range(12)]
    sha256 = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(4)]
    return [
        "\n".join(
            f"commit {d}\nAuthor: Dev <dev@example.com>\n\n    fix the token refresh" for d in digests[:4]
        ),
        "\n".join(f"{d[:7]} Merge branch 'key-rotation'" for d in digests[4:]),
        f"diff --git a/auth.py b/auth.py\nindex {digests[0][:7]}..{digests[1][:7]} 100644",
        f'"sha": "{digests[2]}", "parents": [{{"sha": "{digests[3]}"}}]',
        f"image: ghcr.io/acme/app@sha256:{sha256[0]}\ndigest: sha256:{sha256[1]}",
        f'"checksum": "{sha256[2]}"',
    ]


def _uuids() -> list[str]:
    ids = [str(uuid.UUID(int=_rng.getrandbits(128), version=4)) for _ in range(6)]
    return [
        json.dumps({"sessionId": ids[0], "uuid": ids[1], "parentUuid": ids[2], "type": "assistant"}),
        f"trace_id={ids[3]} span={ids[4][:16]} request {ids[5]} done",
        f"SESSION_ID={ids[0]}\nCLAUDE_SESSION={ids[1]}",
    ]


def _lock_hashes() -> list[str]:
    digest = base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode()
    return [
        '"node_modules/left-pad": {\n  "version": "1.3.0",\n  "resolved": '
        '"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",\n'
        f'  "integrity": "sha512-{digest}"\n}}',
    ]


def _png(width: int = 48, height: int = 32) -> bytes:
    rows = b"".join(
        b"\x00" + bytes((x * 5 + y * 3 + _rng.randrange(24)) % 256 for x in range(width * 3))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _jpeg() -> bytes:
    return (
        b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        + _rng.randbytes(1500)
        + b"\xff\xd9"
    )


def _images() -> list[str]:
    png = base64.b64encode(_png()).decode()
    small_png = base64.b64encode(_png(4, 4)).decode()
    jpeg = base64.b64encode(_jpeg()).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    return [
        png,
        jpeg,
        json.dumps(block),
        json.dumps({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": jpeg}}),
        f'<img src="data:image/png;base64,{small_png}">',
        json.dumps({"icon": small_png}),
        "$ openssl base64 -in shot.png\n" + "\n".join(textwrap.wrap(png, 64)),
        "$ base64 shot.png\n" + "\n".join(textwrap.wrap(png, 76)),
    ]


CLEAN = [*CODE, *_shas(), *_uuids(), *_lock_hashes(), *_images()]
