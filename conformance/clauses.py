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
    "VER-5": (
        "One upload, many writers: writes naming an upload add files to it; names once per "
        "upload; unknown or committed 404, other version 400, older epoch 409 fenced."
    ),
    "VER-6": (
        "Streamed files: a name alone, PUT answers size and sha256; the commit lists them "
        "(409 incomplete, 400 for names not of the upload); 400 before 404 before 409."
    ),
    "VER-7": (
        "Retention: the newest holder deletes a committed version that is not the latest; "
        "it leaves read, list and placements, its step is never reused."
    ),
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
    "VER-5.a": (
        "Any process holding the token adds files to an open upload with a write that names "
        "it (same artifact, same version): the write answers their PUT URLs and the same "
        "upload, and one commit makes one version of every file of every write."
    ),
    "VER-5.b": (
        "A file name declared twice in one upload, in one write or across writes, gets 400 "
        "invalid_argument, and the upload is unchanged (its files and bytes stay, and it "
        "still commits)."
    ),
    "VER-5.c": (
        "A write naming an unknown upload, a committed one, or one of another artifact gets "
        "404 not_found; an upload of another version gets 400 invalid_argument."
    ),
    "VER-5.d": (
        "A write into an upload with a token older than the artifact's epoch, or into an "
        "upload started under an older epoch (even with the newest token), gets 409 fenced; "
        "so does the commit of such an upload."
    ),
    "VER-5.e": (
        "The commit covers every file declared into the upload by any write and needs all "
        "of them: one not uploaded gets 409 incomplete."
    ),
    "VER-6.a": (
        "A file declared by name alone gets a PUT URL; its PUT, with a Content-Length or "
        "chunked, answers 200 {name, size, sha256} of the bytes it received."
    ),
    "VER-6.b": (
        "A later PUT of a streamed file before the commit replaces the earlier one; a PUT "
        "after the commit never changes the version."
    ),
    "VER-6.c": (
        "A commit whose files misses a streamed file, lists one never uploaded, or gives a "
        "file other size/sha256 than declared or received gets 409 incomplete; nothing "
        "becomes visible, and the upload can then be committed with the right list."
    ),
    "VER-6.d": (
        "A commit whose files names a file that is not of the upload, or one name twice, "
        "gets 400 invalid_argument; nothing becomes visible, and the upload can then be "
        "committed."
    ),
    "VER-6.e": (
        "A streamed file's PUT past the implementation's limit gets 413 payload_too_large "
        "and replaces nothing (an earlier PUT's bytes stay the file's)."
    ),
    "VER-6.f": (
        "Where a write, commit or delete is wrong in several ways, a 400 comes before a 404, "
        "and a 404 before a 409 (401/403 come first, as always)."
    ),
    "VER-7.a": (
        "The holder of the newest epoch deletes a committed version that is not the latest "
        "(versions/delete answers artifact, version, deleted_at), and at once it is 404 to "
        "versions/read, gone from versions/list and from usage placements."
    ),
    "VER-7.b": (
        "A deleted version's step is never reused: writing or committing it again gets 409 "
        "not_after_latest."
    ),
    "VER-7.c": (
        "Signed URLs given out before a delete keep serving that version's exact bytes until "
        "the expiry their reply claimed."
    ),
    "VER-7.d": (
        "Deleting the latest gets 409 is_latest; with an older token 409 fenced; an unknown "
        "or deleted version 404 not_found; a key without write 403; a malformed version 400; "
        "each changes nothing."
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
        "commit without upload, a write or delete without version, or an open whose place is "
        "a string; a parameter given empty, which is malformed, not absent) get 400 "
        "invalid_argument and change nothing."
    ),
    "API-1.g": (
        "An open answers artifact, epoch, token, holder, fenced, resume_from, write_location "
        "{cloud, region, route} and warnings, a list of strings."
    ),
    "API-1.h": (
        "An artifact name part is 1 to 128 letters, digits, ., _, - and starts with a letter "
        "or digit: -run, _run, .run, ..run, ., .. and a 129-character part get 400 "
        "invalid_argument from every call that names an artifact; one-character parts, "
        "128-character parts and a.-_z are accepted."
    ),
}
