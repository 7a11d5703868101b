"""The store's schema as ordered migrations. A file is at version N once migrations 1..N ran.

Append a migration to change the schema; never edit one that has shipped.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "conversation graph, sessions, drafts, annotations, commits, usage, settings",
        (
            """
            CREATE TABLE nodes (
                id          VARCHAR PRIMARY KEY,
                seq         BIGINT NOT NULL UNIQUE,
                created_at  DOUBLE NOT NULL,
                session_id  VARCHAR NOT NULL,
                role        VARCHAR NOT NULL,
                name        VARCHAR NOT NULL DEFAULT '',
                input       JSON,
                output      JSON,
                predecessor VARCHAR,
                caller      VARCHAR,
                reads       VARCHAR[] NOT NULL DEFAULT [],
                metadata    JSON NOT NULL DEFAULT '{}',
                CHECK (predecessor IS NULL OR caller IS NULL),
                CHECK (role IN ('user', 'assistant', 'tool', 'system', 'runtime'))
            )
            """,
            "CREATE INDEX nodes_session ON nodes(session_id)",
            """
            CREATE TABLE sessions (
                id          VARCHAR PRIMARY KEY,
                title       VARCHAR NOT NULL,
                head        VARCHAR,
                model       VARCHAR NOT NULL DEFAULT '',
                created_at  DOUBLE NOT NULL,
                updated_at  DOUBLE NOT NULL,
                forked_from VARCHAR,
                hidden      BOOLEAN NOT NULL DEFAULT FALSE
            )
            """,
            """
            CREATE TABLE drafts (
                id          VARCHAR PRIMARY KEY,
                session_id  VARCHAR NOT NULL,
                parent_id   VARCHAR,
                model       VARCHAR NOT NULL DEFAULT '',
                text        VARCHAR NOT NULL DEFAULT '',
                started_at  DOUBLE NOT NULL,
                updated_at  DOUBLE NOT NULL,
                metadata    JSON NOT NULL DEFAULT '{}'
            )
            """,
            """
            CREATE TABLE annotations (
                node_id     VARCHAR NOT NULL,
                kind        VARCHAR NOT NULL,
                created_at  DOUBLE NOT NULL,
                session_id  VARCHAR NOT NULL DEFAULT '',
                value       VARCHAR NOT NULL DEFAULT ''
            )
            """,
            "CREATE INDEX annotations_node ON annotations(node_id)",
            """
            CREATE TABLE commits (
                id            VARCHAR PRIMARY KEY,
                session_id    VARCHAR NOT NULL,
                head_node_id  VARCHAR NOT NULL,
                parent_ids    VARCHAR[] NOT NULL,
                created_at    DOUBLE NOT NULL,
                rules_version VARCHAR NOT NULL,
                total_tokens  BIGINT NOT NULL,
                keyframe      BOOLEAN NOT NULL,
                depth         INTEGER NOT NULL,
                item_count    INTEGER NOT NULL,
                summary       VARCHAR NOT NULL DEFAULT '',
                meta          JSON NOT NULL DEFAULT '{}'
            )
            """,
            "CREATE INDEX commits_head ON commits(head_node_id)",
            """
            CREATE TABLE commit_items (
                commit_id  VARCHAR NOT NULL,
                position   INTEGER NOT NULL,
                op         VARCHAR NOT NULL,
                item       JSON
            )
            """,
            "CREATE INDEX commit_items_commit ON commit_items(commit_id)",
            """
            CREATE TABLE usage (
                id              VARCHAR PRIMARY KEY,
                session_id      VARCHAR NOT NULL,
                head            VARCHAR,
                commit_id       VARCHAR,
                model           VARCHAR NOT NULL,
                phase           VARCHAR NOT NULL DEFAULT 'chat',
                input_tokens    BIGINT NOT NULL DEFAULT 0,
                cache_read      BIGINT NOT NULL DEFAULT 0,
                cache_write     BIGINT NOT NULL DEFAULT 0,
                output_tokens   BIGINT NOT NULL DEFAULT 0,
                estimated_tokens BIGINT NOT NULL DEFAULT 0,
                calibration     DOUBLE,
                cost_usd        DOUBLE NOT NULL DEFAULT 0,
                priced          BOOLEAN NOT NULL DEFAULT TRUE,
                basis           VARCHAR NOT NULL DEFAULT 'measured',
                created_at      DOUBLE NOT NULL
            )
            """,
            "CREATE INDEX usage_session ON usage(session_id)",
            """
            CREATE TABLE import_sources (
                source_key  VARCHAR PRIMARY KEY,
                node_id     VARCHAR NOT NULL,
                session_id  VARCHAR NOT NULL,
                imported_at DOUBLE NOT NULL
            )
            """,
            """
            CREATE TABLE settings (
                key   VARCHAR PRIMARY KEY,
                value JSON NOT NULL
            )
            """,
        ),
    ),
    Migration(
        2,
        "chat settings revisions, presets, pinned and favourite chats",
        (
            # Append-only: every change is a new revision with its time, so each request
            # knows the instructions and parameters it ran under.
            """
            CREATE TABLE session_settings (
                id           VARCHAR PRIMARY KEY,
                session_id   VARCHAR NOT NULL,
                revision     INTEGER NOT NULL,
                changed_at   DOUBLE NOT NULL,
                instructions VARCHAR NOT NULL DEFAULT '',
                parameters   JSON NOT NULL DEFAULT '{}',
                preset       VARCHAR NOT NULL DEFAULT '',
                UNIQUE (session_id, revision)
            )
            """,
            "CREATE INDEX session_settings_session ON session_settings(session_id)",
            """
            CREATE TABLE presets (
                name        VARCHAR PRIMARY KEY,
                data        JSON NOT NULL,
                created_at  DOUBLE NOT NULL,
                updated_at  DOUBLE NOT NULL
            )
            """,
            """
            CREATE TABLE session_marks (
                session_id  VARCHAR PRIMARY KEY,
                pinned      BOOLEAN NOT NULL DEFAULT FALSE,
                favourite   BOOLEAN NOT NULL DEFAULT FALSE,
                changed_at  DOUBLE NOT NULL
            )
            """,
        ),
    ),
    Migration(
        3,
        "attachments: content-addressed bytes shared by every node that names them",
        (
            # Written once per sha256 and never changed; a node's metadata lists the hashes it
            # uses, so a branch and its forks share one copy.
            """
            CREATE TABLE attachments (
                sha256      VARCHAR PRIMARY KEY,
                media_type  VARCHAR NOT NULL,
                size        BIGINT NOT NULL,
                bytes       BLOB NOT NULL,
                created_at  DOUBLE NOT NULL
            )
            """,
        ),
    ),
    Migration(
        4,
        "projects: groups of chats with shared instructions, knowledge and memory",
        (
            # A project's knowledge is the names of knowledge bases (kept in settings);
            # `memory` lets its chats search the user's other chats.
            """
            CREATE TABLE projects (
                id           VARCHAR PRIMARY KEY,
                name         VARCHAR NOT NULL,
                instructions VARCHAR NOT NULL DEFAULT '',
                knowledge    VARCHAR[] NOT NULL DEFAULT [],
                memory       BOOLEAN NOT NULL DEFAULT FALSE,
                created_at   DOUBLE NOT NULL,
                changed_at   DOUBLE NOT NULL
            )
            """,
            # One row per chat in a project; a chat is in at most one. A chat taken out of
            # its project (or whose project was deleted) names none (''); chats are never
            # deleted with their project.
            """
            CREATE TABLE project_chats (
                session_id  VARCHAR PRIMARY KEY,
                project_id  VARCHAR NOT NULL,
                changed_at  DOUBLE NOT NULL
            )
            """,
            # A chat's own switch for memory across chats (off without a row).
            """
            CREATE TABLE chat_memory (
                session_id  VARCHAR PRIMARY KEY,
                enabled     BOOLEAN NOT NULL,
                changed_at  DOUBLE NOT NULL
            )
            """,
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
