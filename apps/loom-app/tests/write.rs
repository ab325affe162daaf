//! `/write` (line protocol) against a real influxd: the PyPI `influxdb`
//! client and raw `curl` bodies (escaping, every field type, each
//! precision, gzip, bad lines beside good ones, a type conflict) go to
//! Debian's influxd and to loom-app; the answers' status and error shape
//! agree, and every point reads back through `/query` the same from both.
//! Loom's own rules (booleans refused, sub-µs times refused, late points
//! stored at their own time, the token) are checked on loom-app alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testing::influxd::{influxd_binary, Influxd};
use testing::App;

/// A loom-app on loopback with a short reorder window (points become
/// visible to queries once the window releases them).
fn start_loom(store: &Path, extra: &[&str]) -> (App, String) {
    let app = App::builder()
        .store(store)
        .no_otlp()
        .args(["--otlp-reorder-window-ms", "300"])
        .args(extra.iter().copied())
        .start();
    let url = format!("http://{}", app.http());
    let deadline = Instant::now() + Duration::from_secs(30);
    while curl(&url, "GET", "/ping", &[], None).0 != 204 {
        assert!(Instant::now() < deadline, "loom-app's /ping never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    (app, url)
}

/// One request through the `curl` binary: (status, body).
fn curl(url: &str, method: &str, path: &str, args: &[&str], body: Option<&Path>) -> (u16, String) {
    let out = tempfile::NamedTempFile::new().expect("temp");
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-X", method, "-o"])
        .arg(out.path())
        .args(["-w", "%{http_code}"])
        .args(args);
    if let Some(b) = body {
        cmd.arg("--data-binary").arg(format!("@{}", b.display()));
    }
    let o = cmd.arg(format!("{url}{path}")).output().expect("curl");
    let code = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    (
        code,
        std::fs::read_to_string(out.path()).unwrap_or_default(),
    )
}

/// POSTs `body` to `/write` with the query string `qs`.
fn write(url: &str, qs: &str, body: &[u8], headers: &[&str]) -> (u16, String) {
    let f = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(f.path(), body).expect("body");
    let mut args = Vec::new();
    for h in headers {
        args.push("-H");
        args.push(h);
    }
    curl(url, "POST", &format!("/write?{qs}"), &args, Some(f.path()))
}

/// `/query` answer's `results` (epoch ns).
fn query(url: &str, q: &str) -> Value {
    let o = Command::new("curl")
        .args(["-s", "-G", &format!("{url}/query")])
        .args(["--data-urlencode", &format!("q={q}")])
        .args(["--data-urlencode", "db=lp", "--data-urlencode", "epoch=ns"])
        .output()
        .expect("curl");
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{q}: {e}: {}", String::from_utf8_lossy(&o.stdout)));
    v["results"].clone()
}

/// Equal as InfluxDB answers are read: numbers by value (loom-app prints
/// an integral float as `1.0` where influxd prints `1`), all else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn error_text(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no error in {body:?}"))
}

fn venv_python() -> PathBuf {
    testing::venv::python(
        "influxql-venv",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/requirements.txt"),
    )
}

fn python_writes(port: &str, create: bool) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/write/write_points.py");
    let mut cmd = Command::new(venv_python());
    cmd.arg(&script).args(["--port", port]);
    if create {
        cmd.arg("--create");
    }
    let o = cmd.output().expect("python");
    assert!(
        o.status.success(),
        "python writer on port {port}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn port_of(url: &str) -> &str {
    url.rsplit(':').next().expect("port")
}

fn gzip(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).expect("gzip");
    e.finish().expect("gzip")
}

/// Bodies both servers take whole (every line good).
const GOOD: &[(&str, &str)] = &[
    // Escaping in measurement, tag keys and values, field keys and strings.
    (
        "precision=ns",
        "my\\ meas\\,ure,tag\\ k\\,1=v\\=x\\ y,t2=plain fld\\=1=1.5,s=\"a\\\"b\\\\c, d=e\" 1700000000000000000\n\
         my\\ meas\\,ure,tag\\ k\\,1=v2,t2=z fld\\=1=-0.0,s=\"\" 1700000000000001000\n",
    ),
    // Every numeric form InfluxDB 1.6 takes (floats with exponents, integers at the edges).
    (
        "precision=u",
        "types,k=a f=1,g=-1.5e-300,h=1.7976931348623157e308,i=9223372036854775807i,j=-9223372036854775808i,s=\"text\" 1700000000000000\n\
         types,k=b f=0.1,g=3,h=-2.5E+10,i=0i,j=-1i,s=\"\\\"\" 1700000000000001\n",
    ),
    // Each precision.
    ("precision=n", "prec,p=n v=1 1700000000123456000\n"),
    ("precision=u", "prec,p=u v=2 1700000000123457\n"),
    ("precision=ms", "prec,p=ms v=3 1700000000124\n"),
    ("precision=s", "prec,p=s v=4 1700000001\n"),
    ("precision=m", "prec,p=m v=5 28333334\n"),
    ("precision=h", "prec,p=h v=6 472223\n"),
    // Out of order within one body and across series; comments and blank lines.
    (
        "precision=s",
        "# a comment\n\nooo,h=a v=3 1700000003\nooo,h=b v=1 1700000001\n  ooo,h=a v=2 1700000002\nooo,h=a v=1 1700000001\n",
    ),
];

/// Measurements both servers hold afterwards.
const MEASUREMENTS: &[&str] = &[
    "\"my meas,ure\"",
    "types",
    "prec",
    "ooo",
    "partial",
    "conflict",
    "gz",
    "\"py weather\"",
    "py_prec",
    "py_batch",
    "py_raw",
];

#[test]
fn line_protocol_reads_back_as_influxd_stores_it() {
    let Some(bin) = influxd_binary() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let influxd = Influxd::start(&bin, &dir.path().join("influxd"));
    let (_app, loom) = start_loom(&dir.path().join("store"), &[]);
    let iurl = influxd.url.clone();
    let (status, text) = curl(
        &iurl,
        "POST",
        "/query",
        &["--data-urlencode", "q=CREATE DATABASE lp"],
        None,
    );
    assert_eq!(status, 200, "CREATE DATABASE: {text}");

    for (qs, body) in GOOD {
        let qs = format!("db=lp&{qs}");
        let a = write(&iurl, &qs, body.as_bytes(), &[]);
        let b = write(&loom, &qs, body.as_bytes(), &[]);
        assert_eq!(a.0, 204, "influxd refused {body:?}: {}", a.1);
        assert_eq!(b, a, "loom-app answered {body:?} otherwise");
    }

    // Bad lines beside good ones: the good ones are kept, the answer is
    // InfluxDB's partial write with the parse error.
    let body = "partial,h=a v=1 1700000000000000000\nthis is not line protocol\npartial,h=b v=2 1700000000000000000\npartial,h=c 1700000000000000000\n";
    for url in [&iurl, &loom] {
        let (status, text) = write(url, "db=lp", body.as_bytes(), &[]);
        assert_eq!(status, 400, "{url}: {text}");
        let e = error_text(&text);
        assert!(
            e.starts_with("partial write: unable to parse 'this is not line protocol': ")
                && e.contains("unable to parse 'partial,h=c 1700000000000000000': ")
                && e.ends_with(" dropped=0"),
            "{url}: {e}"
        );
    }
    // Nothing good: the parse error alone.
    for url in [&iurl, &loom] {
        let (status, text) = write(url, "db=lp", b"nothing good here", &[]);
        assert_eq!(status, 400, "{url}: {text}");
        let e = error_text(&text);
        assert!(
            e.starts_with("unable to parse 'nothing good here': "),
            "{url}: {e}"
        );
    }
    // A field type conflict: the point is dropped with InfluxDB's text,
    // the others of the body are kept.
    let first = "conflict,h=a v=1.5 1700000000000000000\n";
    let second = "conflict,h=b v=2i 1700000001000000000\nconflict,h=a v=2.5 1700000002000000000\n";
    let mut answers = Vec::new();
    for url in [&iurl, &loom] {
        assert_eq!(write(url, "db=lp", first.as_bytes(), &[]).0, 204);
        let (status, text) = write(url, "db=lp", second.as_bytes(), &[]);
        answers.push((status, error_text(&text)));
    }
    assert_eq!(answers[0].0, 400);
    assert_eq!(
        answers[0].1,
        "partial write: field type conflict: input field \"v\" on measurement \"conflict\" is type integer, already exists as type float dropped=1"
    );
    assert_eq!(answers[1], answers[0], "loom-app's type conflict");
    not_utf8_lines(&iurl, &loom);
    // gzip bodies.
    let gz = gzip(b"gz,h=a v=1i,s=\"zipped\" 1700000000000000000\ngz,h=a v=2i,s=\"again\" 1700000000001000000\n");
    for url in [&iurl, &loom] {
        let a = write(url, "db=lp", &gz, &["Content-Encoding: gzip"]);
        assert_eq!(a.0, 204, "{url}: {}", a.1);
    }
    // The PyPI client.
    python_writes(port_of(&iurl), true);
    python_writes(port_of(&loom), false);

    // Every point reads back the same (after loom-app's reorder window).
    let statements: Vec<String> = MEASUREMENTS
        .iter()
        .flat_map(|m| {
            [
                format!("SELECT * FROM {m}"),
                format!("SELECT * FROM {m} GROUP BY *"),
                format!("SHOW FIELD KEYS FROM {m}"),
                format!("SHOW TAG KEYS FROM {m}"),
            ]
        })
        .chain(["SHOW MEASUREMENTS".to_string()])
        .collect();
    for s in &statements {
        let want = query(&iurl, s);
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let got = query(&loom, s);
            if same(&got, &want) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{s}\ninfluxd:  {want}\nloom-app: {got}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A body whose lines are good but two, which hold bytes that are not
/// UTF-8 (in a tag value, in a string field): influxd 1.6.7 stores all five
/// lines with the raw bytes (its JSON shows U+FFFD) and answers 204;
/// loom-app, whose names and strings are UTF-8 text, refuses those two
/// lines alone with InfluxDB's parse-error shape and keeps the three good
/// ones, which read back as influxd's.
fn not_utf8_lines(iurl: &str, loom: &str) {
    let body: &[u8] = b"utf,host=a v=1i 1700000000\n\
        utf,host=b\xff v=2i 1700000001\n\
        utf,host=c v=3i,s=\"x\xfey\" 1700000002\n\
        utf,host=d v=4i 1700000003\n\
        utf,host=e v=5i 1700000004\n";
    let (status, text) = write(iurl, "db=lp&precision=s", body, &[]);
    assert_eq!(status, 204, "influxd: {text}");
    let (status, text) = write(loom, "db=lp&precision=s", body, &[]);
    assert_eq!(status, 400, "loom-app: {text}");
    let e = error_text(&text);
    assert!(
        e.starts_with(
            "partial write: unable to parse 'utf,host=b\u{fffd} v=2i 1700000001': invalid UTF-8"
        ) && e.contains(
            "unable to parse 'utf,host=c v=3i,s=\"x\u{fffd}y\" 1700000002': invalid UTF-8"
        ) && e.ends_with(" dropped=0"),
        "loom-app: {e}"
    );
    let q = "SELECT v FROM utf WHERE host = 'a' OR host = 'd' OR host = 'e' GROUP BY host";
    let want = query(iurl, q);
    assert_eq!(
        want[0]["series"].as_array().map(Vec::len),
        Some(3),
        "{want}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !same(&query(loom, q), &want) {
        assert!(
            Instant::now() < deadline,
            "{q}\ninfluxd:  {want}\nloom-app: {}",
            query(loom, q)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // influxd kept the two lines Loom refused; Loom stored nothing of them.
    let all = "SELECT count(v) FROM utf";
    assert_eq!(query(iurl, all)[0]["series"][0]["values"][0][1], 5);
    assert_eq!(query(loom, all)[0]["series"][0]["values"][0][1], 3);
}

/// Loom's own rules, on loom-app alone: booleans and sub-µs times refused
/// point by point, a point too late for the reorder window stored at its
/// own time (never at another), unsigned integers kept, the
/// database required, unknown precisions and encodings refused, the token
/// asked for.
#[test]
fn loom_rules_for_points_it_cannot_store_as_sent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").expect("token");
    let t = token.to_string_lossy().to_string();
    let (app, url) = start_loom(
        &dir.path().join("store"),
        &["--auth-token-file", &t, "--machine-output"],
    );
    let auth = "Authorization: Token s3cret";

    assert_eq!(
        curl(&url, "GET", "/ping", &[], None).0,
        204,
        "ping needs no token"
    );
    let (status, _) = write(&url, "db=lp", b"m v=1 1000", &[]);
    assert_eq!(status, 401);
    assert_eq!(write(&url, "db=lp&u=x&p=s3cret", b"m v=1 1000", &[]).0, 204);
    assert_eq!(write(&url, "db=lp&p=wrong", b"m v=1 2000", &[]).0, 401);

    let (status, text) = write(&url, "", b"m v=1 3000", &[auth]);
    assert_eq!(
        (status, error_text(&text).as_str()),
        (400, "database is required")
    );
    let (status, text) = write(&url, "db=lp&precision=d", b"m v=1 3000", &[auth]);
    assert_eq!(status, 400, "{text}");
    let (status, _) = write(
        &url,
        "db=lp",
        b"m v=1 3000",
        &[auth, "Content-Encoding: br"],
    );
    assert_eq!(status, 415);
    let (status, _) = write(
        &url,
        "db=lp",
        b"not gzip",
        &[auth, "Content-Encoding: gzip"],
    );
    assert_eq!(status, 400);

    let body = "flags,h=a on=true 1700000000000000000\n\
                flags,h=a v=1u 1700000000000001000\n\
                flags,h=a v=18446744073709551615u 1700000000000002000\n\
                flags,h=a v=3u 1700000000000002500\n";
    let (status, text) = write(&url, "db=lp", body.as_bytes(), &[auth]);
    let e = error_text(&text);
    assert_eq!(status, 400);
    assert!(
        e.starts_with("partial write: boolean field \"on\"")
            && e.contains("not a whole microsecond")
            && e.ends_with("dropped=2"),
        "{e}"
    );
    late_point_is_stored_at_its_own_time(&url, auth);
    counted_on_stats_and_final_lines(app, &url, auth);
}

/// The values of the first series `s` answers on loom-app at `url` (epoch s).
fn values(url: &str, auth: &str, s: &str) -> Value {
    let o = Command::new("curl")
        .args(["-s", "-H", auth, "-G", &format!("{url}/query")])
        .args([
            "--data-urlencode",
            &format!("q={s}"),
            "--data-urlencode",
            "epoch=s",
        ])
        .output()
        .expect("curl");
    serde_json::from_slice::<Value>(&o.stdout).expect("json")["results"][0]["series"][0]["values"]
        .clone()
}

/// A point too late for the reorder window is stored at its own time (in
/// a late sibling of its series), found there by windowed questions, and
/// its series is listed once; the flags points written before read back.
fn late_point_is_stored_at_its_own_time(url: &str, auth: &str) {
    // Late: the series' newest stored point is at 100 s; once the window
    // has released it, a point at 50 s is stored at its own time (in a
    // late sibling of the series), never elsewhere.
    assert_eq!(
        write(url, "db=lp&precision=s", b"late,h=a v=1 100", &[auth]).0,
        204
    );
    std::thread::sleep(Duration::from_millis(1500));
    let (status, text) = write(
        url,
        "db=lp&precision=s",
        b"late,h=a v=2 50\nlate,h=a v=3 101",
        &[auth],
    );
    assert_eq!(status, 204, "{text}");

    let deadline = Instant::now() + Duration::from_secs(10);
    let q = |s: &str| values(url, auth, s);
    loop {
        let flags = q("SELECT v FROM flags");
        let late = q("SELECT v FROM late");
        let want_flags =
            serde_json::json!([[1700000000, 1], [1700000000, 18446744073709551615u64]]);
        let want_late = serde_json::json!([[50, 2.0], [100, 1.0], [101, 3.0]]);
        if flags == want_flags && late == want_late {
            break;
        }
        assert!(Instant::now() < deadline, "flags {flags}, late {late}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Windowed questions find the late point at its own time, once.
    let around = "FROM late WHERE time >= 40s AND time <= 60s";
    assert_eq!(
        q(&format!("SELECT count(v), max(v) {around}")),
        serde_json::json!([[40, 1, 2.0]])
    );
    assert_eq!(
        q("SELECT count(v) FROM late WHERE time >= 60s AND time <= 100s"),
        serde_json::json!([[60, 1]])
    );
    assert_eq!(
        q("SHOW SERIES FROM late"),
        serde_json::json!([["late,h=a"]]),
        "one series, its late sibling not listed"
    );
}

/// `/write`'s counters on loom-app's `STATS` and `Final /write` lines, after
/// the writes of [`loom_rules_for_points_it_cannot_store_as_sent`] and a
/// field type conflict and a bad line beside a good one: 7 points stored
/// (a late one among them); 3 refused (a boolean and a sub-µs time: not
/// storable as sent; a type conflict); 1 line unable to parse.
fn counted_on_stats_and_final_lines(app: testing::App, url: &str, auth: &str) {
    let (status, text) = write(url, "db=lp", b"m v=2i 4000", &[auth]);
    assert!(
        status == 400 && text.contains("field type conflict"),
        "{text}"
    );
    let (status, text) = write(url, "db=lp", b"m v=3 5000\nnot lp", &[auth]);
    assert!(status == 400 && text.contains("unable to parse"), "{text}");
    let end = app.stop();
    let stats = end.line("STATS ").expect("a STATS line");
    for want in [
        "write_points_stored=7 ",
        "write_points_refused=3 ",
        "write_refused_conflict=1 ",
        "write_refused_series_limit=0 ",
        "write_refused_unstorable=2 ",
        "write_refused_late=0 ",
        "write_bad_lines=1 ",
        "write_refused_not_stored=0",
    ] {
        assert!(stats.contains(want), "{want} in {stats}");
    }
    let fin = end.line("Final /write:").expect("a Final /write line");
    assert!(
        fin.contains("lines unable to parse 1, points stored 7, points refused 3, refused for a field conflict 1, refused over the series limit 0, refused as not storable as sent 2, refused late 0, refused by the engine 0"),
        "{fin}"
    );
}

/// Points later than the reorder window, made on purpose, are stored at
/// their own time (two late siblings: 40 s comes after 50 s), found by
/// windowed count, max and raw rows as brute force over the points sent
/// says, before and after a SIGKILL and restart; a late point after the
/// restart joins the sibling found again; the series is listed once.
#[test]
fn late_points_are_stored_at_their_own_time_across_a_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let (mut app, url) = start_loom(&store, &[]);
    let lp = "db=lp&precision=s";
    assert_eq!(write(&url, lp, b"lat,h=a v=1 100", &[]).0, 204);
    std::thread::sleep(Duration::from_millis(1500));
    let body = b"lat,h=a v=2 50\nlat,h=a v=3 40\nlat,h=a v=4 101";
    assert_eq!(write(&url, lp, body, &[]).0, 204);
    let mut sent: Vec<(u64, f64)> = vec![(100, 1.0), (50, 2.0), (40, 3.0), (101, 4.0)];
    let check = |url: &str, sent: &[(u64, f64)]| {
        let q = |s: &str| values(url, "Accept: application/json", s);
        let mut rows = sent.to_vec();
        rows.sort_by_key(|p| p.0);
        let want = serde_json::json!(rows);
        let deadline = Instant::now() + Duration::from_secs(10);
        while q("SELECT v FROM lat") != want {
            assert!(Instant::now() < deadline, "{}", q("SELECT v FROM lat"));
            std::thread::sleep(Duration::from_millis(200));
        }
        for (t0, t1) in [(30u64, 60u64), (45, 100), (0, 200)] {
            let inside: Vec<f64> = rows
                .iter()
                .filter(|p| (t0..=t1).contains(&p.0))
                .map(|p| p.1)
                .collect();
            let max = inside.iter().copied().fold(f64::MIN, f64::max);
            assert_eq!(
                q(&format!(
                    "SELECT count(v), max(v) FROM lat WHERE time >= {t0}s AND time <= {t1}s"
                )),
                serde_json::json!([[t0, inside.len(), max]]),
                "[{t0} s, {t1} s]"
            );
        }
        assert_eq!(q("SHOW SERIES FROM lat"), serde_json::json!([["lat,h=a"]]));
    };
    check(&url, &sent);
    app.process.kill();
    drop(app);
    let (app, url) = start_loom(&store, &[]);
    check(&url, &sent);
    assert_eq!(write(&url, lp, b"lat,h=a v=5 45", &[]).0, 204);
    sent.push((45, 5.0));
    check(&url, &sent);
    let end = app.stop();
    let fin = end.line("Final: ").expect("a Final: line");
    // (What the intake log gives back after the kill is stored again only
    // where the crash lost it, so the late count of this run is not fixed.)
    assert!(
        fin.contains("late refused 0, late stored at their own time "),
        "{fin}"
    );
}
