"""How the rules behave, decided once when the app is made: the contract's way by default.

Each field set to False breaks one rule on purpose (a `--fault`, to prove the conformance
suite bites): the rule modules ask these named fields at the one place each rule is kept,
never fault names. `create_app` takes a policy, or builds it from the `faults` setting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from .faults import Fault, check_faults


@dataclass(frozen=True)
class Policy:
    fencing: bool = True  # FENCE-2: an old epoch's token is refused
    latest_is_highest: bool = True  # READ-1: latest is the highest step
    fresh_refused: bool = True  # OPEN-3: no fresh start over checkpoints
    fork_needs_empty: bool = True  # FORK-1: a fork goes to an empty artifact
    upload_keeps_its_epoch: bool = True  # FENCE-3: a newer token cannot launder an upload
    cross_cloud_true: bool = True  # XC-1: cross_cloud as it is
    keys_checked: bool = True  # AUTH-1: every call needs a valid key
    ranges_honoured: bool = True  # READ-3: Range is served
    commit_needs_files: bool = True  # VER-4: every file before the commit
    urls_expire: bool = True  # READ-4: expired URLs are refused
    fallback_warns: bool = True  # PLACE-3: a fallback placement warns
    versions_immutable: bool = True  # VER-2: a committed name is never replaced

    @classmethod
    def breaking(cls, faults: Iterable[str]) -> Policy:
        """The policy with each named fault's rule broken."""
        off = {_FIELD_OF[Fault(name)]: False for name in check_faults(faults)}
        return cls(**off)

    def broken(self) -> list[str]:
        """The faults this policy has switched on, by name (for health and the banner)."""
        return sorted(f.value for f, name in _FIELD_OF.items() if not getattr(self, name))


_FIELD_OF: dict[Fault, str] = {
    Fault.NO_FENCING: "fencing",
    Fault.STALE_LATEST: "latest_is_highest",
    Fault.FRESH_OVERWRITES: "fresh_refused",
    Fault.FORK_INTO_NONEMPTY: "fork_needs_empty",
    Fault.OPEN_NOT_ATOMIC: "upload_keeps_its_epoch",
    Fault.WRONG_CROSS_CLOUD: "cross_cloud_true",
    Fault.NO_KEY_CHECK: "keys_checked",
    Fault.RANGE_IGNORED: "ranges_honoured",
    Fault.COMMIT_WITHOUT_FILES: "commit_needs_files",
    Fault.URL_NEVER_EXPIRES: "urls_expire",
    Fault.FALLBACK_SILENT: "fallback_warns",
    Fault.VERSION_OVERWRITE: "versions_immutable",
}
assert set(_FIELD_OF) == set(Fault) and set(_FIELD_OF.values()) == {f.name for f in fields(Policy)}
