import Foundation
import HTTPTypes
import Hummingbird

/// The API's contract, schemas/openapi.yaml (embedded by schemas/embed_openapi.py into
/// ``yaml``), served at `/openapi.yaml`, and a page for people at `/docs` that lists every
/// operation with who may call it.
public enum OpenAPIDocument {
    /// One operation as the docs page lists it.
    struct Operation: Equatable {
        var method: String, path: String, summary: String, access: String
        /// Its own cap on request bodies, bytes (`x-storecast-body-limit`), where it is below the
        /// API's ``ControlAPI/maximumBodyBytes``.
        var bodyLimit: Int? = nil
        /// Its body is a JSON merge patch, where null clears a field (`x-storecast-merge-patch`).
        var mergePatch = false
    }

    /// The document's operations, read off its layout (paths at two spaces, methods at four,
    /// their keys at six; the contract test checks the document with a real YAML parser).
    static func operations(_ text: String = yaml) -> [Operation] {
        var operations: [Operation] = []
        var path = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("    "), !line.hasPrefix("     "), ["get:", "put:", "post:", "delete:", "patch:"].contains(line.dropFirst(4)) {
                operations.append(Operation(method: line.dropFirst(4).dropLast().uppercased(), path: path, summary: "", access: ""))
            } else if line.hasPrefix("      summary: "), !operations.isEmpty {
                operations[operations.count - 1].summary = String(line.dropFirst(15))
            } else if line.hasPrefix("      x-storecast-access: "), !operations.isEmpty {
                operations[operations.count - 1].access = String(line.dropFirst(26))
            } else if line.hasPrefix("      x-storecast-body-limit: "), !operations.isEmpty {
                operations[operations.count - 1].bodyLimit = Int(line.dropFirst(30))
            } else if line == "      x-storecast-merge-patch: true", !operations.isEmpty {
                operations[operations.count - 1].mergePatch = true
            } else if line.hasPrefix("components:") {
                break
            }
        }
        return operations
    }

    static func page() -> String {
        func escape(_ s: String) -> String {
            s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        let rows = operations().map {
            "<tr><td><code>\($0.method)</code></td><td><code>\(escape($0.path))</code></td><td>\(escape($0.access))</td><td>\(escape($0.summary))</td></tr>"
        }.joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Storecast control API</title>
            <style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:70rem}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}code{font-size:13px}</style>
            </head><body>
            <h1>Storecast control API</h1>
            <p>Send <code>Authorization: Bearer &lt;token&gt;</code>: the operator's admin token, or a tenant's API key (<code>sck_…</code>), which may call
            its own tenant's operations within its scopes. The contract, with every request and answer: <a href="/openapi.yaml">openapi.yaml</a> (OpenAPI 3.1).
            Every error is <code>{"error": {"code", "message", "field"}}</code>.</p>
            <table><thead><tr><th>method</th><th>path</th><th>who may call it</th><th></th></tr></thead><tbody>
            \(rows)
            </tbody></table></body></html>
            """
    }

    /// `/openapi.yaml` and `/docs`, public.
    static func addRoutes(to router: Router<APIRequestContext>) {
        router.get("/openapi.yaml") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/yaml; charset=utf-8"
            headers[.cacheControl] = "max-age=300"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: yaml)))
        }
        router.get("/docs") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: page())))
        }
    }
}
