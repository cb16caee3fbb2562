"""The contract's rule and clause ids with their one-line texts (our own summaries of
docs/contract.md, which is the one source of the ids); :mod:`conformance.rules` checks
against them and re-exports them."""

from __future__ import annotations

__all__ = ["CLAUSES", "RULES"]

RULES: dict[str, str] = {
    "AUTH-1": "Every /api/v1 call without a valid key gets 401 unauthenticated.",
    "AUTH-2": (
        "An open with a key that cannot write gets 403 forbidden, checked before anything "
        "else, and changes nothing."
    ),
    "AUTH-3": "Key scopes are artifact prefixes with read or write; every endpoint enforces them.",
    "OPEN-1": "resume=latest on an artifact without versions succeeds with resume_from null.",
    "OPEN-2": "resume=latest on an artifact with versions returns the latest, signed.",
    "OPEN-3": "A fresh open (resume null) is refused with 409 has_checkpoints once versions exist.",
    "FORK-1": "A fork needs an empty target (409 not_empty); missing source 404, malformed 400.",
    "FORK-2": "A fork returns the source version, records forked_from, leaves the source alone.",
    "FENCE-1": "Each successful open returns an epoch greater than every earlier one.",
    "FENCE-2": "Writes and commits with a token older than the newest open get 409 fenced.",
    "FENCE-3": "The open is atomic with its read: no older-epoch commit becomes visible after it.",
    "FENCE-4": "Refused or failed opens fence nobody; the newest holder keeps writing.",
    "VER-1": "Version names are step-NNNNNNNN, file names clean paths declared once, else 400.",
    "VER-2": "Committed versions are immutable: committing an existing name gets 409.",
    "VER-3": "A new version's step must exceed the latest's: 409 not_after_latest.",
    "VER-4": "A commit needs every declared file uploaded exactly, else 409 incomplete.",
    "READ-1": "version=latest is the highest committed step, from any place; unknown is 404.",
    "READ-2": "urls=1 gives URLs a plain GET downloads; the bytes match sha256.",
    "READ-3": "URLs honour Range; parallel ranged GETs reassemble the file exactly.",
    "READ-4": (
        "URLs are signed: another path, a URL built by hand, a changed signature or an expired "
        "URL gets 403; a URL works until the expiry it claims."
    ),
    "PLACE-1": "A write from a place with a location there goes to it, route local.",
    "PLACE-2": "Cloud has locations in other regions only: its default, inter_region, warning.",
    "PLACE-3": "A cloud without locations or an unknown place: the fallback, cross_cloud, warning.",
    "PLACE-4": "A version's location never changes; nothing is copied between locations.",
    "XC-1": "cross_cloud is true exactly when reader and location clouds differ; route follows.",
    "USAGE-1": "Usage counts bytes written and served per route, priced by the published table.",
    "API-1": "Replies and errors have the shapes the HTTP API section gives.",
}

#: One testable MUST each, as docs/contract.md states them; ids are ``RULE.letter``.
CLAUSES: dict[str, str] = {
    "AUTH-1.a": (
        "A call to any /api/v1 endpoint with no Authorization header, or one that is not "
        "Bearer <key>, gets 401 unauthenticated."
    ),
    "AUTH-1.b": (
        "A call to any /api/v1 endpoint with a well-formed but unknown key gets 401 "
        "unauthenticated."
    ),
    "AUTH-2.a": (
        "An open by a key that cannot write the artifact (read-only, or outside its "
        "prefixes) gets 403 forbidden."
    ),
    "AUTH-2.b": (
        "Such a refused open changes nothing: no artifact is created, the epoch does not "
        "rise, and the current holder is not fenced."
    ),
    "AUTH-2.c": (
        "The key is checked before anything else: such an open gets 403 forbidden even when "
        "it would also be refused for another reason (a fork into an artifact with versions, "
        "a fork from a missing source, a fresh open of an artifact with checkpoints, a "
        "malformed resume)."
    ),
    "AUTH-3.a": (
        "A key with read on a prefix can read, list and read usage of the artifacts under "
        "it, and gets 403 forbidden for write and commit."
    ),
    "AUTH-3.b": (
        "A key gets 403 forbidden from every endpoint (open, write, commit, read, list, "
        "artifacts/read, usage with artifact) for an artifact outside its prefixes."
    ),
    "AUTH-3.c": (
        "write implies read: a key with write on a prefix can do everything read allows there."
    ),
    "AUTH-3.d": "usage/read without artifact reports only the artifacts the key can read.",
    "OPEN-1.a": (
        "resume: 'latest' on an artifact that does not exist, or has no versions, "
        "succeeds with resume_from: null, and the artifact then exists."
    ),
    "OPEN-2.a": (
        "resume: 'latest' on an artifact with versions returns as resume_from the "
        "committed version with the highest step, with its files, sizes and sha256."
    ),
    "OPEN-2.b": (
        "The resume_from of an open carries signed URLs whose plain GET returns the bytes "
        "of each file."
    ),
    "OPEN-3.a": "resume: null on an artifact with at least one version gets 409 has_checkpoints.",
    "OPEN-3.b": (
        "Such a refused fresh open changes nothing: epoch, holder and versions stay, and "
        "the holder keeps writing."
    ),
    "OPEN-3.c": (
        "resume: null on an artifact with no versions (new, or opened before and still "
        "empty) succeeds with resume_from: null."
    ),
    "FORK-1.a": (
        "A fork into an artifact with versions gets 409 not_empty and changes nothing on "
        "either artifact."
    ),
    "FORK-1.b": "A fork from a source artifact or version that does not exist gets 404 not_found.",
    "FORK-1.c": (
        "A fork from a malformed source (not o41://P/N/step-XXXXXXXX) gets 400 invalid_argument."
    ),
    "FORK-1.d": (
        "A fork needs read on the source and write on the new artifact; without either it "
        "gets 403 forbidden."
    ),
    "FORK-2.a": (
        "A fork returns the source version (name, step, location, files with sha256 and "
        "URLs) as resume_from."
    ),
    "FORK-2.b": (
        "After a fork, artifacts/read of the new artifact shows forked_from: {'artifact', "
        "'version'} of the source."
    ),
    "FORK-2.c": (
        "A fork leaves the source untouched: its epoch and holder stay and its holder "
        "keeps writing and committing."
    ),
    "FENCE-1.a": (
        "Every successful open (latest, fresh, fork) returns an epoch greater than every "
        "earlier epoch of that artifact."
    ),
    "FENCE-2.a": "A write with a token of an epoch older than the newest open gets 409 fenced.",
    "FENCE-2.b": (
        "A commit with a token of an epoch older than the newest open gets 409 fenced, "
        "and that version never shows in read, list, latest or a later resume_from."
    ),
    "FENCE-2.c": (
        "An upload belongs to the token that started it: committing it with another box's "
        "newer token still gets 409 fenced."
    ),
    "FENCE-2.d": (
        "An open names whom it fenced: fenced is the epoch and holder of the open before "
        "it, and null when there was none."
    ),
    "FENCE-2.e": (
        "An unknown token, or a token of another artifact, gets 400 invalid_argument on "
        "write and commit."
    ),
    "FENCE-2.f": (
        "An open without holder gets a made-up holder, which the open returns and "
        "artifacts/read, the versions it writes and the next open's fenced then name."
    ),
    "FENCE-3.a": (
        "A newer open is atomic with its read: an older-epoch upload, even with all its "
        "files uploaded before the open, never becomes visible after it."
    ),
    "FENCE-4.a": (
        "Refused or failed opens (any error) raise no epoch and fence nobody: the newest "
        "holder keeps writing and committing."
    ),
    "VER-1.a": (
        "A version name other than step- followed by exactly 8 ASCII digits (in a write "
        "or a read) gets 400 invalid_argument."
    ),
    "VER-1.b": "A file name with a ., .., empty or absolute segment gets 400 invalid_argument.",
    "VER-1.c": (
        "A write that declares one file name twice gets 400 invalid_argument; a write of "
        "distinct names with the same size and sha256 is accepted, and each file reads back."
    ),
    "VER-2.a": (
        "Writing or committing a version name that is already committed gets 409 version_exists."
    ),
    "VER-2.b": (
        "A committed version never changes: its files, sizes, sha256, location and bytes "
        "read the same forever."
    ),
    "VER-3.a": (
        "A version whose step is not greater than the latest committed step gets 409 "
        "not_after_latest."
    ),
    "VER-4.a": (
        "A commit before every declared file was uploaded (a declared empty file too) "
        "gets 409 incomplete."
    ),
    "VER-4.b": (
        "A commit where a file arrived with another size or sha256 than declared gets 409 "
        "incomplete."
    ),
    "VER-4.c": (
        "Uncommitted uploads are invisible to read, list, latest, resume_from and the "
        "has-checkpoints refusal."
    ),
    "VER-4.d": (
        "A commit of an unknown upload, or of another artifact's upload, gets 404 not_found."
    ),
    "VER-4.e": (
        "A declared size over the limit, or a PUT body longer than declared, gets 413 "
        "payload_too_large."
    ),
    "READ-1.a": (
        "version=latest (also when version is omitted) is the committed version with the "
        "highest step, whatever the reader's place and wherever the versions are located."
    ),
    "READ-1.b": "An unknown artifact or version gets 404 not_found.",
    "READ-1.c": (
        "versions/list gives every committed version in step order, however many there are, "
        "each a Version without "
        "files (artifact, version, step, location, size, created_at, epoch, holder, route, "
        "cross_cloud)."
    ),
    "READ-2.a": (
        "urls=1 gives each file a URL that a plain GET with no header downloads; the "
        "bytes match size and sha256 (the page's verbatim call works as written)."
    ),
    "READ-3.a": (
        "GET and HEAD honour one Range: bytes=a-b: 206 with Content-Range and exactly "
        "those bytes, at every edge of the file; a range that starts inside the file and "
        "ends past it is cut to the file's end."
    ),
    "READ-3.b": "A range that cannot be satisfied gets 416.",
    "READ-4.a": "A signed URL used on another path gets 403.",
    "READ-4.b": "A signed URL with a changed signature gets 403.",
    "READ-4.c": "An expired signed URL gets 403.",
    "READ-4.d": (
        "A URL built by hand from a signed one (another artifact, version or file name put "
        "into it, plain, percent-encoded or in base64; or a part of its path or query left "
        "out) gives no file's bytes: 403, or 404."
    ),
    "READ-4.e": (
        "A signed URL works until the urls_expire_at (a write's PUT URLs until the "
        "expires_at) its reply claims."
    ),
    "PLACE-1.a": "A write from a place that has a location goes to that location with route local.",
    "PLACE-2.a": (
        "A write from a cloud whose locations are all in other regions goes to that "
        "cloud's default location with route inter_region."
    ),
    "PLACE-2.b": "Such an open carries a warning.",
    "PLACE-3.a": (
        "A write from a cloud with no location, or an unknown place, goes to the fallback "
        "location with route cross_cloud."
    ),
    "PLACE-3.b": "Such an open carries a warning that names the fallback location.",
    "PLACE-4.a": (
        "A version's location never changes, whoever reads it from wherever, and later "
        "opens and writes do not move or copy it."
    ),
    "XC-1.a": (
        "A read is cross_cloud: true exactly when the reader's cloud differs from the "
        "location's cloud."
    ),
    "XC-1.b": "A read's route is local, inter_region or cross_cloud by the definition of a route.",
    "XC-1.c": "A read without a place has route and cross_cloud null.",
    "USAGE-1.a": "Usage counts every byte written, per route.",
    "USAGE-1.b": (
        "Usage counts the bytes actually served by reads (a ranged GET counts what it "
        "sent; a HEAD, a 403 or a 416 nothing), per route."
    ),
    "USAGE-1.c": (
        "Usage prices each route by the price table, by the cloud the bytes leave, and totals it."
    ),
    "USAGE-1.d": (
        "A transfers row adds up every byte of one direction, artifact, version, place and route."
    ),
    "USAGE-1.e": (
        "placements lists where checkpoints were written away from the box's region "
        "(default and fallback), with versions and bytes."
    ),
    "USAGE-1.f": (
        "prices holds, in any shape, the table's inter_region price and the cross_cloud "
        "price of aws, gcp, azure and of any other cloud, in USD per GB."
    ),
    "API-1.a": (
        "Every error is JSON {\"error\": {\"code\", \"message\"}} with the table's status "
        "and code, the message a human sentence."
    ),
    "API-1.b": (
        "A Version carries artifact, version, step (the number of its name), location "
        "{cloud, region}, size (the sum of its files), created_at (a timestamp), epoch and "
        "holder of the open that wrote it, files {name, size, sha256}, route and cross_cloud."
    ),
    "API-1.c": (
        "A Version with URLs gives every file a url and carries urls_expire_at, a timestamp; "
        "with urls=0, or no urls at all, no file has a url and there is no urls_expire_at."
    ),
    "API-1.d": (
        "A write answers upload, the open's write location and route, one {name, url} per "
        "declared file, and expires_at, a timestamp."
    ),
    "API-1.e": (
        "artifacts/read answers artifact, epoch and holder of the newest open, latest (null "
        "when none), versions (the count), forked_from (null unless forked) and created_at."
    ),
    "API-1.f": (
        "Malformed names or bodies (an artifact that is not project/name of letters, digits, "
        "., _, -; a body that is not a JSON object; a missing or mistyped field, such as a "
        "commit without upload or an open whose place is a string) get 400 invalid_argument "
        "and change nothing."
    ),
    "API-1.g": (
        "An open answers artifact, epoch, token, holder, fenced, resume_from, write_location "
        "{cloud, region, route} and warnings, a list of strings."
    ),
}
