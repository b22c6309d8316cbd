import OpenAPIRuntime
import StorecastRuntime

/// The operations generated from schemas/openapi.yaml (``APIProtocol``, made by
/// schemas/generate_api.sh), one extension per resource. Their inputs and outputs are the
/// document's own types, so an answer the document does not allow does not compile. Who may call
/// each is checked before it runs (``DocumentedOperations``, ``OperationAccess``).
struct ControlAPIHandlers: APIProtocol {
    let catalog: StreamCatalog
    let webhooks: WebhookDispatcher.Settings
    /// Where playback goes when no packager node is registered.
    let playbackBaseURL: String
    /// Where publishers send (`rtmp://host:port`), for publish URLs.
    let rtmpBaseURL: String
}
