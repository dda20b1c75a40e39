//! A minimal W3C WebDriver client over HTTP (what tauri-driver speaks): sessions, elements, clicks,
//! typing, scripts and screenshots. Enough to drive the real app window like a person would.

use base64::Engine;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One WebDriver session (one running app window).
pub struct Session {
    http: reqwest::Client,
    base: String,
    id: String,
}

/// An element of the page.
pub struct Element<'a> {
    session: &'a Session,
    id: String,
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let value: Value = response.json().await.map_err(|e| format!("{url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url}: {status}: {}", value["value"]["message"].as_str().unwrap_or(&value.to_string())));
    }
    Ok(value["value"].clone())
}

impl Session {
    /// Starts the app `application` through the WebDriver server at `base` (`http://127.0.0.1:4444`).
    pub async fn start(base: &str, application: &str) -> Result<Session, String> {
        // No single WebDriver call should take long; a hang fails the test instead of stalling CI.
        let http = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().map_err(|e| e.to_string())?;
        let capabilities =
            json!({ "capabilities": { "alwaysMatch": { "tauri:options": { "application": application } } } });
        // A driver still starting under load can drop the first request (CI run on 2efbd59: "error sending
        // request for url …/session"); a request that never reached it is safe to send again.
        let mut attempt = 0;
        let value = loop {
            match call(&http, reqwest::Method::POST, &format!("{base}/session"), Some(capabilities.clone())).await {
                Err(error) if error.contains("error sending request") && attempt < 3 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_secs(3)).await;
                }
                other => break other?,
            }
        };
        let id = value["sessionId"].as_str().ok_or_else(|| format!("no session id in {value}"))?.to_string();
        Ok(Session { http, base: base.to_string(), id })
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        call(&self.http, reqwest::Method::POST, &format!("{}/session/{}{path}", self.base, self.id), Some(body)).await
    }

    async fn get(&self, path: &str) -> Result<Value, String> {
        call(&self.http, reqwest::Method::GET, &format!("{}/session/{}{path}", self.base, self.id), None).await
    }

    /// Ends the session: the app window closes and the app exits.
    pub async fn quit(self) -> Result<(), String> {
        call(&self.http, reqwest::Method::DELETE, &format!("{}/session/{}", self.base, self.id), None).await.map(|_| ())
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) in the page and returns its value.
    pub async fn script(&self, script: &str, args: Vec<Value>) -> Result<Value, String> {
        self.post("/execute/sync", json!({ "script": script, "args": args })).await
    }

    /// The first element matching the CSS `selector`, if any.
    pub async fn find(&self, selector: &str) -> Result<Option<Element<'_>>, String> {
        let list = self.post("/elements", json!({ "using": "css selector", "value": selector })).await?;
        Ok(list
            .as_array()
            .and_then(|l| l.first())
            .and_then(|e| e[ELEMENT_KEY].as_str())
            .map(|id| Element { session: self, id: id.to_string() }))
    }

    /// Waits up to `timeout` for an element matching `selector`. Errors: timeout (the message names the
    /// selector and shows `describe`'s output — e.g. the page's status line).
    pub async fn wait_for(&self, selector: &str, timeout: Duration) -> Result<Element<'_>, String> {
        let started = Instant::now();
        loop {
            if let Some(element) = self.find(selector).await? {
                return Ok(element);
            }
            if started.elapsed() > timeout {
                let page =
                    self.script("return document.body.innerText.slice(0, 3000)", vec![]).await.unwrap_or_default();
                return Err(format!(
                    "no {selector:?} after {timeout:?}; the page shows:\n{}",
                    page.as_str().unwrap_or("")
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Waits up to `timeout` until `script` returns a truthy value, and returns it.
    pub async fn wait_until(&self, script: &str, timeout: Duration) -> Result<Value, String> {
        let started = Instant::now();
        loop {
            let value = self.script(script, vec![]).await?;
            if !(value.is_null() || value == json!(false) || value == json!("") || value == json!(0)) {
                return Ok(value);
            }
            if started.elapsed() > timeout {
                let page =
                    self.script("return document.body.innerText.slice(0, 3000)", vec![]).await.unwrap_or_default();
                return Err(format!(
                    "`{script}` still false after {timeout:?}; the page shows:\n{}",
                    page.as_str().unwrap_or("")
                ));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Saves a PNG of the window to `path`.
    pub async fn screenshot(&self, path: &std::path::Path) -> Result<(), String> {
        let data = self.get("/screenshot").await?;
        let bytes =
            base64::engine::general_purpose::STANDARD.decode(data.as_str().unwrap_or("")).map_err(|e| e.to_string())?;
        std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl Element<'_> {
    /// Clicks the element after scrolling it to the middle of its scroll container: WebKitWebDriver's own
    /// scrolling brings an element just into view, where a sticky box (the question field under a long
    /// answer) can cover it, and the click then fails with a bare 400.
    pub async fn click(&self) -> Result<(), String> {
        let mut reference = serde_json::Map::new();
        reference.insert(ELEMENT_KEY.to_string(), Value::String(self.id.clone()));
        self.session
            .script(
                "arguments[0].scrollIntoView({block: 'center', inline: 'nearest'}); return true;",
                vec![Value::Object(reference)],
            )
            .await?;
        self.session.post(&format!("/element/{}/click", self.id), json!({})).await.map(|_| ())
    }

    /// Types `text` into the element (WebDriver key codes such as `\u{E007}` for Enter work).
    pub async fn type_text(&self, text: &str) -> Result<(), String> {
        self.session.post(&format!("/element/{}/value", self.id), json!({ "text": text })).await.map(|_| ())
    }

    pub async fn text(&self) -> Result<String, String> {
        Ok(self.session.get(&format!("/element/{}/text", self.id)).await?.as_str().unwrap_or("").to_string())
    }
}
