-- SoftGrade store schema. Every table, index and constraint lives here.
-- Users query this file's tables with SQL: keep docs/schema.md in step with it.
-- Bump store.db.SCHEMA_VERSION whenever an existing table changes shape, and add the
-- upgrade of older stores to the "Upgrades" section at the end (new tables need neither).

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

-- Decided once per (dataset, seed), shared by every task and method of that seed. The seed
-- here is a split seed: runs.split_seed (or runs.seed where that is NULL) names their split.
CREATE TABLE IF NOT EXISTS splits (
    dataset_id  VARCHAR NOT NULL,
    seed        INTEGER NOT NULL,
    image_id    VARCHAR NOT NULL,
    split       VARCHAR NOT NULL CHECK (split IN ('train', 'val', 'test')),
    PRIMARY KEY (dataset_id, seed, image_id)
);

-- A submitted study. Since version 2 it also says who launched it and from where (NULL for
-- studies stored before), and carries the lifecycle fields: notes (markdown), tags, and
-- archived_at (archived studies are hidden from the pickers, kept in full).
CREATE TABLE IF NOT EXISTS studies (
    study_id       VARCHAR PRIMARY KEY,
    name           VARCHAR NOT NULL,
    dataset_id     VARCHAR,
    spec           JSON NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    launched_by    VARCHAR,
    launched_from  VARCHAR,
    notes          VARCHAR,
    tags           VARCHAR[] DEFAULT [],
    archived_at    TIMESTAMP
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
    -- Any method the registry (engine/methods/) names, checked in Python before a study is
    -- queued; results imported from another tool may name others (shown by name).
    method           VARCHAR NOT NULL CHECK (length(trim(method)) BETWEEN 1 AND 100),
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
    -- Version 5: a pruned search (engine/pruning.py) stopped this run early because it had
    -- already lost; epochs_run says how far it trained, and its predictions and epoch metrics
    -- are those it reached. A pruned run is never selected.
    pruned           BOOLEAN DEFAULT false,
    -- Version 5: the seed that drew the run's split and the one that drew its initial
    -- weights, batch order and search sample (engine/seeds.py). seed stays the pairing key.
    -- NULL (every run stored before version 5, and imported results): the same as seed;
    -- reads use coalesce(split_seed, seed). Checked >= 0 in Python (engine.config.TrainConfig):
    -- DuckDB cannot add a column with a CHECK to an older store.
    split_seed       INTEGER,
    init_seed        INTEGER,
    UNIQUE (study_id, task, method, seed, config_index)
);

-- A run that failed (an exception in its slot) while its study went on: what it was and why.
-- It has no predictions; resuming the study trains it again, and a success removes its row.
CREATE TABLE IF NOT EXISTS failed_runs (
    run_id        VARCHAR PRIMARY KEY,
    study_id      VARCHAR NOT NULL,
    job_id        VARCHAR,
    task          VARCHAR NOT NULL,
    method        VARCHAR NOT NULL,
    seed          INTEGER NOT NULL,
    config_index  INTEGER NOT NULL,
    config        JSON NOT NULL,
    error_line    VARCHAR NOT NULL,  -- the exception's own line, what a person reads first
    traceback     VARCHAR NOT NULL,
    failed_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
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

-- Results trained by another tool (`softgrade import-results FILE`, docs/import-results.md):
-- one metric value of one selected run (task, method, seed) per row, for a study imported as
-- per-seed metrics, which has no predictions to derive its metrics from. metric is a name of
-- the metric registry (engine/analysis/metrics.py).
CREATE TABLE IF NOT EXISTS seed_metrics (
    study_id  VARCHAR NOT NULL,
    task      VARCHAR NOT NULL CHECK (task IN ('KL', 'CPPD')),
    method    VARCHAR NOT NULL,
    seed      INTEGER NOT NULL,
    metric    VARCHAR NOT NULL,
    value     DOUBLE NOT NULL,
    PRIMARY KEY (study_id, task, method, seed, metric)
);

-- The films each seed of an imported study (import-results) was fitted and selected on
-- (n_train) and tested on (n_test), when the file gave them: a study trained here counts
-- them from its splits. The corrected resampled t-test needs their ratio.
CREATE TABLE IF NOT EXISTS seed_split_sizes (
    study_id  VARCHAR NOT NULL,
    task      VARCHAR NOT NULL CHECK (task IN ('KL', 'CPPD')),
    seed      INTEGER NOT NULL,
    n_train   INTEGER NOT NULL CHECK (n_train > 0),
    n_test    INTEGER NOT NULL CHECK (n_test > 0),
    PRIMARY KEY (study_id, task, seed)
);

-- Import reports (python -m jobs import; the Launch and Data pages): one row per import that
-- registered a dataset, and every problem its check found, so the Data page can show (and
-- export) the report of the films a dataset holds and those it left out. A dataset imported
-- again with the same films gets another import row; nothing is replaced.
CREATE TABLE IF NOT EXISTS dataset_imports (
    import_id     VARCHAR PRIMARY KEY,
    dataset_id    VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    labels_csv    VARCHAR,
    layout        VARCHAR NOT NULL CHECK (layout IN ('csv', 'grade_folders', 'dicom')),
    layout_split  VARCHAR CHECK (layout_split IN ('test', 'ignored')),
    skip_bad      BOOLEAN NOT NULL,
    n_files       INTEGER NOT NULL,
    n_rows        INTEGER NOT NULL,
    n_good        INTEGER NOT NULL,
    n_left_out    INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,
    n_warnings    INTEGER NOT NULL,
    notes         JSON NOT NULL,
    checked_s     DOUBLE,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS import_problems (
    import_id  VARCHAR NOT NULL,
    seq        INTEGER NOT NULL,
    file       VARCHAR NOT NULL,
    csv_row    INTEGER,
    severity   VARCHAR NOT NULL CHECK (severity IN ('error', 'warning')),
    kind       VARCHAR NOT NULL,
    problem    VARCHAR NOT NULL,
    action     VARCHAR NOT NULL,
    PRIMARY KEY (import_id, seq)
);

-- Which knee detector an import's check located the knees with, and how it scored on
-- held-out boxes: 'classical' (engine.detect.detect_knee_box, calibrated on the phantom,
-- no held-out scores) until a trained detector exists; a trained one fills the scores.
CREATE TABLE IF NOT EXISTS import_detectors (
    import_id     VARCHAR PRIMARY KEY,
    detector      VARCHAR NOT NULL,
    held_out_iou  DOUBLE,
    held_out_map  DOUBLE
);

-- Crop review (the Review crops page): the current decision on one film of a dataset, either
-- leave it out ('exclude') or crop it with this box ('box': x0, y0, x1, y1 in film pixels,
-- x1 and y1 exclusive). One row per film: a new decision replaces the old one and undoing
-- deletes it. A study queued afterwards uses them (jobs.services.review.reviewed_spec): its cache
-- crops with these boxes and holds no excluded film, so no split ever has one. `who` is
-- 'local' until sign-in exists.
CREATE TABLE IF NOT EXISTS crop_reviews (
    dataset_id   VARCHAR NOT NULL,
    image_id     VARCHAR NOT NULL,
    action       VARCHAR NOT NULL CHECK (action IN ('exclude', 'box')),
    x0           INTEGER,
    y0           INTEGER,
    x1           INTEGER,
    y1           INTEGER,
    who          VARCHAR NOT NULL DEFAULT 'local',
    reviewed_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (dataset_id, image_id),
    CHECK (action = 'exclude' OR (x0 IS NOT NULL AND y0 IS NOT NULL AND x1 IS NOT NULL
        AND y1 IS NOT NULL AND x0 >= 0 AND y0 >= 0 AND x1 > x0 AND y1 > y0))
);

-- Where a study trained: one row each time a worker claims its job (a resumed study may have
-- several). Code and library versions are the worker's: the code that trained is what counts.
CREATE TABLE IF NOT EXISTS study_environments (
    study_id      VARCHAR NOT NULL,
    job_id        VARCHAR NOT NULL,
    worker_id     VARCHAR NOT NULL,
    recorded_at   TIMESTAMP NOT NULL DEFAULT current_timestamp,
    worker_host   VARCHAR NOT NULL,
    devices       JSON NOT NULL,
    gpu_names     JSON,
    code_version  VARCHAR,
    git_commit    VARCHAR,
    git_dirty     BOOLEAN,
    python        VARCHAR,
    torch         VARCHAR,
    cuda          VARCHAR,
    cudnn         VARCHAR,
    dlordinal     VARCHAR,
    ultralytics   VARCHAR,
    -- How the runs trained (version 4): the executor ('local', 'inline', 'ray'), torch's CPU
    -- threads per slot (CPU runs' numbers depend on it) and whether the search was pruned.
    executor          VARCHAR,
    threads_per_slot  INTEGER,
    search_pruned     BOOLEAN
);

-- What each run trained here cost (issue 30): the Launch page's estimate and the Jobs page's
-- time left come from these rows, per device. wall_s is the slot's time from the run's start
-- to its predictions; slots_sharing is how many slots trained on the same device meanwhile
-- (a GPU's lanes run side by side, so a run's share of the card is wall_s / slots_sharing);
-- device_name is the GPU's name ('NVIDIA H200') or the CPU's model and torch threads;
-- images_per_s is n_train * epochs_run / wall_s. The run's settings are copied in, so the
-- costs read without the runs table. Runs stored before this table, or imported, have none.
CREATE TABLE IF NOT EXISTS run_costs (
    run_id         VARCHAR PRIMARY KEY,
    device_name    VARCHAR NOT NULL,
    slots_sharing  INTEGER NOT NULL CHECK (slots_sharing >= 1),
    task           VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    image_size     INTEGER NOT NULL,
    batch_size     INTEGER NOT NULL,
    max_epochs     INTEGER NOT NULL,
    n_train        INTEGER NOT NULL CHECK (n_train > 0),
    epochs_run     INTEGER NOT NULL CHECK (epochs_run > 0),
    wall_s         DOUBLE NOT NULL CHECK (wall_s > 0),
    images_per_s   DOUBLE NOT NULL,
    recorded_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Live training images/s per device of each worker (the Jobs page's GPU table): the sum over
-- the device's slots of their latest epoch's training images / epoch seconds, rewritten with
-- the job's progress; a slot between runs counts nothing.
CREATE TABLE IF NOT EXISTS device_rates (
    worker_id     VARCHAR NOT NULL,
    device        VARCHAR NOT NULL,
    images_per_s  DOUBLE NOT NULL,
    runs          INTEGER NOT NULL,
    updated_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (worker_id, device)
);

-- Local accounts of a served lab (none: single-user mode on 127.0.0.1). password_hash is an
-- argon2id hash (PHC string); the password itself is never stored.
CREATE TABLE IF NOT EXISTS users (
    name           VARCHAR PRIMARY KEY,
    role           VARCHAR NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    password_hash  VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    disabled       BOOLEAN NOT NULL DEFAULT false
);

-- Signed-in browser sessions. The browser keeps the token; the store keeps only its SHA-256,
-- so a copy of the store signs nobody in. A session ends when idle too long or too old.
CREATE TABLE IF NOT EXISTS sessions (
    token_sha256  VARCHAR PRIMARY KEY,
    user_name     VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    last_seen_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    client        VARCHAR
);

-- Sign-in tries with a SoftGrade account: what the back-off counts (store.sign_in.SignInLimits).
-- A try is written as 'checking' in the same transaction that checks the limits, before its
-- password is checked, so concurrent tries cannot all pass the check; it becomes 'ok' or
-- 'failed' once checked, at checked_at ('checking' left by a stopped server counts as failed;
-- a wait runs from a failure's checked_at, or its started_at while unchecked). known_client:
-- SHA-256 of the known-client token the browser showed, when valid for this name (a browser
-- where the account signed in before: slowed by its own failures only). Tries refused while
-- waiting are not rows here (only audit lines), so a wait runs out on time. Rows older than a
-- day are dropped.
CREATE TABLE IF NOT EXISTS sign_in_attempts (
    attempt_id    VARCHAR PRIMARY KEY,
    started_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    checked_at    TIMESTAMP,
    name          VARCHAR NOT NULL,
    client        VARCHAR,
    known_client  VARCHAR,
    outcome       VARCHAR NOT NULL DEFAULT 'checking'
                  CHECK (outcome IN ('checking', 'ok', 'failed'))
);

-- A second reader's grade of one film (issue 41): appended, never replacing the dataset's
-- recorded label or an earlier reading; the latest per (dataset, film, task, reader) counts.
-- New table: created on any store of version 5 when it is opened (no version change).
CREATE TABLE IF NOT EXISTS second_readings (
    dataset_id  VARCHAR NOT NULL,
    image_id    VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    grade       INTEGER NOT NULL CHECK (grade >= 0),
    recorded    INTEGER,
    reader      VARCHAR NOT NULL,
    study_id    VARCHAR,
    note        VARCHAR,
    read_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Who did what, when: sign-in, launch, cancel, import, archive, delete, account changes.
-- actor is a user name, or 'local' in single-user mode and from the command line.
CREATE TABLE IF NOT EXISTS audit_log (
    logged_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    actor      VARCHAR NOT NULL,
    action     VARCHAR NOT NULL,
    target     VARCHAR,
    detail     VARCHAR
);

-- Upgrades. A store of an older version gets here the columns its tables lack; on a store
-- created by this file they change nothing. Keep each in step with its CREATE TABLE above
-- (tests/store/test_migrations.py checks that an upgraded store equals a new one).
-- Version 1 -> 2:
ALTER TABLE studies ADD COLUMN IF NOT EXISTS launched_by VARCHAR;
ALTER TABLE studies ADD COLUMN IF NOT EXISTS launched_from VARCHAR;
ALTER TABLE studies ADD COLUMN IF NOT EXISTS notes VARCHAR;
ALTER TABLE studies ADD COLUMN IF NOT EXISTS tags VARCHAR[] DEFAULT [];
ALTER TABLE studies ADD COLUMN IF NOT EXISTS archived_at TIMESTAMP;
-- Version 2 -> 3: runs.method accepts every registered method. DuckDB cannot alter a CHECK,
-- so store.db.init_schema rebuilds the runs table, every row kept, before this file runs.
-- Version 3 -> 4: the study card names the executor, CPU threads per slot and pruning.
ALTER TABLE study_environments ADD COLUMN IF NOT EXISTS executor VARCHAR;
ALTER TABLE study_environments ADD COLUMN IF NOT EXISTS threads_per_slot INTEGER;
ALTER TABLE study_environments ADD COLUMN IF NOT EXISTS search_pruned BOOLEAN;
-- Version 4 -> 5: runs stopped by a pruned search are marked (every earlier run trained
-- fully), and a run's split seed and init seed apart (NULL before: both were its seed).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS pruned BOOLEAN DEFAULT false;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS split_seed INTEGER;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS init_seed INTEGER;
-- Version 5 -> 6: a run whose loss or probabilities went non-finite is kept as diverged (the
-- epoch it happened; NULL: it never did). Its predictions are those of its best finite
-- epoch (uniform where it had none), and it is never selected over a run that stayed finite.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS diverged_epoch INTEGER;
