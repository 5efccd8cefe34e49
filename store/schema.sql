-- SoftGrade store schema. Every table, index and constraint lives here.
-- Users query this file's tables with SQL: keep docs/schema.md in step with it.
-- Bump store.db.SCHEMA_VERSION whenever this file changes shape.

CREATE TABLE IF NOT EXISTS meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);

-- A registered set of images (the phantom, or an imported folder).
CREATE TABLE IF NOT EXISTS datasets (
    dataset_id  VARCHAR PRIMARY KEY,
    kind        VARCHAR NOT NULL CHECK (kind IN ('phantom', 'folder')),
    spec_key    VARCHAR NOT NULL UNIQUE,
    params      JSON NOT NULL,
    n_images    INTEGER NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS images (
    dataset_id  VARCHAR NOT NULL,
    image_id    VARCHAR NOT NULL,
    patient_id  VARCHAR NOT NULL,
    side        VARCHAR CHECK (side IN ('L', 'R')),
    source      VARCHAR,
    PRIMARY KEY (dataset_id, image_id)
);

-- One row per (image, task) that has a grade. grade is what the annotator recorded (what
-- models train and are scored on); true_grade is the phantom's noiseless grade (NULL for
-- real data).
CREATE TABLE IF NOT EXISTS labels (
    dataset_id  VARCHAR NOT NULL,
    image_id    VARCHAR NOT NULL,
    task        VARCHAR NOT NULL CHECK (task IN ('KL', 'CPPD')),
    grade       INTEGER NOT NULL CHECK (grade >= 0),
    true_grade  INTEGER,
    PRIMARY KEY (dataset_id, image_id, task)
);

-- Decided once per (dataset, seed), shared by every task and method of that seed.
CREATE TABLE IF NOT EXISTS splits (
    dataset_id  VARCHAR NOT NULL,
    seed        INTEGER NOT NULL,
    image_id    VARCHAR NOT NULL,
    split       VARCHAR NOT NULL CHECK (split IN ('train', 'val', 'test')),
    PRIMARY KEY (dataset_id, seed, image_id)
);

CREATE TABLE IF NOT EXISTS studies (
    study_id    VARCHAR PRIMARY KEY,
    name        VARCHAR NOT NULL,
    dataset_id  VARCHAR,
    spec        JSON NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One job per submitted study. request_id makes a submit idempotent (double click, refresh).
CREATE TABLE IF NOT EXISTS jobs (
    job_id           VARCHAR PRIMARY KEY,
    study_id         VARCHAR NOT NULL,
    request_id       VARCHAR UNIQUE,
    status           VARCHAR NOT NULL
                     CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    cancel_requested BOOLEAN NOT NULL DEFAULT false,
    worker_id        VARCHAR,
    attempts         INTEGER NOT NULL DEFAULT 0,
    runs_total       INTEGER,
    runs_done        INTEGER NOT NULL DEFAULT 0,
    current_run      VARCHAR,
    current_epoch    INTEGER,
    latest_val_amae  DOUBLE,
    error            VARCHAR,
    created_at       TIMESTAMP NOT NULL DEFAULT current_timestamp,
    started_at       TIMESTAMP,
    heartbeat_at     TIMESTAMP,
    finished_at      TIMESTAMP
);

CREATE TABLE IF NOT EXISTS job_logs (
    job_id   VARCHAR NOT NULL,
    logged_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    level    VARCHAR NOT NULL CHECK (level IN ('INFO', 'WARNING', 'ERROR')),
    message  VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS workers (
    worker_id     VARCHAR PRIMARY KEY,
    hostname      VARCHAR NOT NULL,
    pid           INTEGER NOT NULL,
    executor      VARCHAR NOT NULL,
    devices       JSON NOT NULL,
    slots         INTEGER NOT NULL,
    started_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    heartbeat_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    stopped_at    TIMESTAMP
);

-- One finished training run (one search configuration of one task, method and seed).
-- Written in one transaction together with its predictions and epoch_metrics.
CREATE TABLE IF NOT EXISTS runs (
    run_id           VARCHAR PRIMARY KEY,
    study_id         VARCHAR NOT NULL,
    job_id           VARCHAR,
    task             VARCHAR NOT NULL CHECK (task IN ('KL', 'CPPD')),
    method           VARCHAR NOT NULL
                     CHECK (method IN ('nominal', 'binomial', 'beta', 'triangular', 'exponential')),
    seed             INTEGER NOT NULL,
    config_index     INTEGER NOT NULL,
    config           JSON NOT NULL,
    selected         BOOLEAN NOT NULL DEFAULT false,
    status           VARCHAR NOT NULL CHECK (status IN ('succeeded', 'failed')),
    best_epoch       INTEGER,
    epochs_run       INTEGER,
    val_amae         DOUBLE,
    device           VARCHAR,
    duration_s       DOUBLE,
    weights_init     VARCHAR CHECK (weights_init IN ('imagenet', 'random')),
    checkpoint_path  VARCHAR,
    created_at       TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (study_id, task, method, seed, config_index)
);

-- Per-image class probabilities of a run, for both its validation and its test images.
CREATE TABLE IF NOT EXISTS predictions (
    run_id    VARCHAR NOT NULL,
    image_id  VARCHAR NOT NULL,
    split     VARCHAR NOT NULL CHECK (split IN ('val', 'test')),
    y_true    TINYINT NOT NULL,
    y_pred    TINYINT NOT NULL,
    probs     FLOAT[] NOT NULL,
    PRIMARY KEY (run_id, split, image_id)
);

CREATE TABLE IF NOT EXISTS epoch_metrics (
    run_id      VARCHAR NOT NULL,
    epoch       INTEGER NOT NULL,
    train_loss  DOUBLE,
    val_loss    DOUBLE,
    val_amae    DOUBLE,
    duration_s  DOUBLE,
    PRIMARY KEY (run_id, epoch)
);

-- Which rule made each stored split (engine.vocab.SPLIT_RULE). Splits are decided once per
-- (dataset, seed) and kept, so a store made before this table existed holds splits with no
-- row here: those came from the legacy rule (engine.vocab.LEGACY_SPLIT_RULE).
CREATE TABLE IF NOT EXISTS split_rules (
    dataset_id  VARCHAR NOT NULL,
    seed        INTEGER NOT NULL,
    rule        VARCHAR NOT NULL,
    PRIMARY KEY (dataset_id, seed)
);

-- Studies loaded from an exported bundle (`python -m jobs import-study FILE`, e.g. the
-- bundled reference study examples/reference-study.zip), with the bundle's study card:
-- where and how it was run (GPU, versions, date, command).
CREATE TABLE IF NOT EXISTS imported_studies (
    study_id     VARCHAR PRIMARY KEY,
    source       VARCHAR NOT NULL,
    card         JSON NOT NULL,
    imported_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);
