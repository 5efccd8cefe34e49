"""What the admin pages show, as frames and text: the accounts table, the lab accounts that
sign in through the identity provider and their mapping, the audit log and its CSV, a new
account's form checked, an upload's size checked. No streamlit, so it is unit-tested."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from jobs.services.access import NAME_PATTERN, Role, oidc_account, password_problem
from jobs.services.csv_safe import escape_csv_cells

ACCOUNT_COLUMNS = {
    "name": "Name",
    "role": "Role",
    "disabled": "Disabled",
    "last_sign_in": "Last sign-in",
    "created_at": "Added",
}
AUDIT_COLUMNS = {
    "logged_at": "When",
    "actor": "Who",
    "action": "Action",
    "target": "Target",
    "detail": "Details",
}


def accounts_table(accounts: pd.DataFrame) -> pd.DataFrame:
    """`store.users.list_users` as the Accounts page shows it; "never" for no sign-in."""
    table = accounts.reindex(columns=list(ACCOUNT_COLUMNS)).copy()
    table["last_sign_in"] = [
        "never" if pd.isna(t) else f"{pd.Timestamp(t):%Y-%m-%d %H:%M}"
        for t in table["last_sign_in"]
    ]
    table["created_at"] = [
        "" if pd.isna(t) else f"{pd.Timestamp(t):%Y-%m-%d}" for t in table["created_at"]
    ]
    table["disabled"] = table["disabled"].fillna(False).astype(bool)
    return table.rename(columns=ACCOUNT_COLUMNS)


def lab_accounts_table(sign_ins: pd.DataFrame, mapping: dict[str, Role]) -> pd.DataFrame:
    """`store.audit.lab_account_sign_ins` with the role the e-mail mapping gives each person
    now ("no access" once the mapping no longer lists them)."""
    roles = []
    for email in sign_ins["name"]:
        account = oidc_account(str(email), mapping)
        roles.append(account.role.value if account else "no access (not in the mapping)")
    return pd.DataFrame(
        {
            "E-mail": sign_ins["name"].astype(str),
            "Role now": roles,
            "Last sign-in": [f"{pd.Timestamp(t):%Y-%m-%d %H:%M}" for t in sign_ins["last_sign_in"]],
            "First sign-in": [f"{pd.Timestamp(t):%Y-%m-%d}" for t in sign_ins["first_sign_in"]],
            "Sign-ins": sign_ins["sign_ins"].astype(int),
        }
    )


def role_mapping_table(mapping: dict[str, Role]) -> pd.DataFrame:
    """The e-mail mapping as rows: single e-mails first, then whole domains."""
    keys = sorted(mapping, key=lambda key: (key.startswith("@"), key))
    return pd.DataFrame(
        {
            "E-mail or domain": keys,
            "Role": [mapping[key].value for key in keys],
        }
    )


def audit_table(log: pd.DataFrame, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """`store.audit.read_audit` with the page's column names, newest first.

    Args:
        log: The audit lines.
        names: Study id -> its name now: a study target reads ``"name (study-…)"``; a
            deleted study keeps its id alone. A line without details shows an empty cell,
            not "None".
    """
    table = log.reindex(columns=list(AUDIT_COLUMNS)).copy()
    table["target"] = [_target_text(t, names or {}) for t in table["target"]]
    table["detail"] = ["" if _blank(d) else str(d) for d in table["detail"]]
    return table.rename(columns=AUDIT_COLUMNS)


def _blank(value: object) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value)) or value == "None"


def _target_text(target: object, names: Mapping[str, str]) -> str:
    if _blank(target):
        return ""
    name = names.get(str(target))
    return f"{name} ({target})" if name else str(target)


def audit_csv(log: pd.DataFrame, names: Mapping[str, str] | None = None) -> str:
    """The audit lines shown, as CSV (times in ISO 8601)."""
    table = audit_table(log, names).copy()
    table["When"] = pd.to_datetime(table["When"]).dt.strftime("%Y-%m-%dT%H:%M:%S")
    return escape_csv_cells(table).to_csv(index=False)


def new_account_problems(name: str, role: str, password: str, again: str) -> list[str]:
    """Everything wrong with the Accounts page's "Add an account" form (empty: fine)."""
    problems = []
    if not NAME_PATTERN.fullmatch(name.strip()):
        problems.append(
            "a name is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter "
            "or digit"
        )
    if role not in {r.value for r in Role}:
        problems.append(f"the role must be one of {', '.join(r.value for r in Role)}")
    if problem := password_problem(password, name.strip()):
        problems.append(problem)
    if password != again:
        problems.append("the two passwords differ")
    return problems


def upload_size_problem(name: str, size_bytes: int, limit_mb: float) -> str | None:
    """Why an upload is refused for its size, or None when it fits under ``limit_mb``."""
    if size_bytes <= limit_mb * 2**20:
        return None
    return (
        f"{name} is {size_bytes / 2**20:.1f} MB; Grade a film takes films up to "
        f"{limit_mb:g} MB (`python -m jobs up --max-upload-mb N` sets the limit)."
    )
