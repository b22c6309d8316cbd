import StorecastRuntime

/// The document's shapes that are our own types (typeOverrides in
/// schemas/openapi-generator-config.yaml), by the names the generated code uses.
typealias StreamResource = StreamDirectory.Stream
typealias SessionResource = StreamDirectory.Session
typealias StreamSettingsPatch = StreamSettingsChange
typealias StreamPageBody = ListPage<StreamDirectory.Stream, StreamsList>
typealias SessionPageBody = ListPage<StreamDirectory.Session, SessionsList>
typealias DeliveryPageBody = ListPage<Components.Schemas.Delivery, DeliveriesList>
