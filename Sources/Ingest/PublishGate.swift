import Foundation
import Logging
import Metrics
import PostgresClient
import RTMP
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// A publish that passed the key check.
public struct PublishGrant: Sendable, Equatable {
    public var streamID: Int64
    public var sessionID: Int64
    public var tenant: String
    public var streamName: String
}

/// What the RTMP handlers need from the rest of ingest: the key check against PostgreSQL and
/// the hand-off to the dispatcher thread. Sendable; shared by all connections.
public final class PublishGate: Sendable {
    private let catalog: StreamCatalog
    private let dispatcher: ZMQActor<DispatchCommand>
    private let nodeID: String
    private let logger: Logger
    private let refused = Counter(label: "storecast_ingest_publish_refused_total")
    private let accepted = Counter(label: "storecast_ingest_publish_accepted_total")

    init(catalog: StreamCatalog, dispatcher: ZMQActor<DispatchCommand>, nodeID: String, logger: Logger) {
        self.catalog = catalog
        self.dispatcher = dispatcher
        self.nodeID = nodeID
        self.logger = logger
    }

    func authorize(_ request: PublishRequest, remote: String) async -> Result<PublishGrant, ServerSessionStateMachine.Rejection> {
        let record: StreamRecord?
        do {
            record = try await catalog.stream(forKey: request.streamKey)
        } catch {
            logger.error("stream key check failed: database unavailable", metadata: ["remote": "\(remote)", "error": "\(error)"])
            refused.increment()
            return .failure(.unavailable("Storecast cannot check stream keys right now; retry in a few seconds."))
        }
        guard let record else {
            logger.warning("publish refused: unknown stream key", metadata: ["remote": "\(remote)", "app": "\(request.app)", "key_prefix": "\(request.streamKey.prefix(7))"])
            refused.increment()
            return .failure(.badName("Unknown stream key. Copy the key from your Storecast dashboard."))
        }
        guard record.liveStreamsOfTenant < record.maxConcurrentStreams else {
            logger.warning("publish refused: tenant at concurrent-stream quota", metadata: ["remote": "\(remote)", "tenant": "\(record.tenantSlug)", "quota": "\(record.maxConcurrentStreams)"])
            refused.increment()
            return .failure(.quotaExceeded("Tenant \(record.tenantSlug) already has \(record.liveStreamsOfTenant) live streams (quota \(record.maxConcurrentStreams))."))
        }
        do {
            let session = try await catalog.openSession(streamID: record.streamID, ingestNode: nodeID, remoteAddress: remote, client: request.flashVer)
            accepted.increment()
            logger.info("publish started", metadata: ["remote": "\(remote)", "tenant": "\(record.tenantSlug)", "stream": "\(record.streamSlug)", "session": "\(session)", "client": "\(request.flashVer ?? "?")"])
            return .success(PublishGrant(streamID: record.streamID, sessionID: session, tenant: record.tenantSlug, streamName: record.streamSlug))
        } catch {
            logger.error("could not open session", metadata: ["error": "\(error)"])
            refused.increment()
            return .failure(.unavailable("Storecast could not start the session; retry in a few seconds."))
        }
    }

    func forward(_ message: WireMessage, streamID: Int64) {
        dispatcher.send(.media(streamID: streamID, message))
    }

    func describe(_ grant: PublishGrant, width: Int?, height: Int?, video: String?, audio: String?) {
        let catalog = self.catalog
        Task { try? await catalog.describeSession(grant.sessionID, videoCodec: video, audioCodec: audio, width: width, height: height) }
    }

    func ended(_ grant: PublishGrant, reason: String) {
        dispatcher.send(.ended(streamID: grant.streamID, reason: reason))
        let (catalog, logger) = (self.catalog, self.logger)
        logger.info("publish ended", metadata: ["stream": "\(grant.streamName)", "session": "\(grant.sessionID)", "reason": "\(reason)"])
        Task {
            do { try await catalog.closeSession(grant.sessionID, streamID: grant.streamID, reason: reason) } catch {
                logger.error("could not close session row", metadata: ["session": "\(grant.sessionID)", "error": "\(error)"])
            }
        }
    }
}
