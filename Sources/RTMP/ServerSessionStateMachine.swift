/// The command layer of one publishing RTMP connection (RTMP specification 1.0, section 7.2),
/// as a state machine: each event returns actions that the channel handler carries out.
///
/// Accepts the orders real clients use: ffmpeg (connect, releaseStream, FCPublish, createStream,
/// publish), OBS/librtmp (the same), HaishinKit (FCPublish after createStream) and Larix.
public struct ServerSessionStateMachine: Sendable {
    public static let publishStreamID: UInt32 = 1
    public static let windowAcknowledgementSize: UInt32 = 2_500_000
    public static let outgoingChunkSize: UInt32 = 4096

    public enum State: Sendable, Equatable {
        case awaitingConnect
        case connected(app: String)
        case authorizing(PublishRequest)
        case publishing(PublishRequest)
        case closed
    }

    public enum Action: Sendable, Equatable {
        case send([RTMPMessage])
        /// Check the stream key; answer with ``publishAuthorized()`` or ``publishRejected(_:)``.
        case authorize(PublishRequest)
        case media(RTMPMessage)
        case metadata([AMF0Value])
        case unpublished
        /// Close the connection after sending `messages`.
        case close(reason: String, messages: [RTMPMessage])
    }

    public enum Rejection: Error, Sendable, Equatable {
        case badName(String)
        case quotaExceeded(String)
        case unavailable(String)
    }

    /// Media and metadata that arrive while the key is being checked (clients that do not wait
    /// for NetStream.Publish.Start) are held, up to this many messages, and replayed on success.
    public static let maximumHeldWhileAuthorizing = 1024

    public private(set) var state: State = .awaitingConnect
    private var heldWhileAuthorizing: [RTMPMessage] = []
    private var tcUrl: String?
    private var flashVer: String?
    private var objectEncoding: Double = 0
    private var publishTransaction: Double = 0

    public init() {}

    public mutating func received(_ message: RTMPMessage) -> [Action] {
        if case .closed = state { return [] }
        guard let type = message.type else { return [] }
        switch type {
        case .amf0Command:
            guard let values = try? AMF0.decodeAll(message.payload) else {
                return close("malformed AMF0 command")
            }
            return command(values, streamID: message.messageStreamID)
        case .amf3Command:
            // AMF3 command messages start with a format byte 0 followed by AMF0 values.
            guard message.payload.first == 0, let values = try? AMF0.decodeAll(Array(message.payload.dropFirst())) else {
                return close("malformed AMF3 command")
            }
            return command(values, streamID: message.messageStreamID)
        case .audio, .video, .amf0Data, .amf3Data:
            if case .authorizing = state {
                if heldWhileAuthorizing.count < Self.maximumHeldWhileAuthorizing { heldWhileAuthorizing.append(message) }
                return []
            }
            guard case .publishing = state else { return [] }
            return mediaAction(message)
        case .userControl:
            // PingRequest (6) -> PingResponse (7).
            if message.payload.count >= 6, message.payload[0] == 0, message.payload[1] == 6 {
                let t = UInt32(message.payload[2]) << 24 | UInt32(message.payload[3]) << 16 | UInt32(message.payload[4]) << 8 | UInt32(message.payload[5])
                return [.send([.pingResponse(t)])]
            }
            return []
        default:
            return []
        }
    }

    private mutating func command(_ values: [AMF0Value], streamID: UInt32) -> [Action] {
        guard let name = values.first?.stringValue else { return close("command without a name") }
        let transaction = values.count > 1 ? (values[1].numberValue ?? 0) : 0
        switch name {
        case "connect":
            guard case .awaitingConnect = state else { return close("second connect") }
            let object = values.count > 2 ? values[2] : .null
            let app = object["app"]?.stringValue ?? ""
            tcUrl = object["tcUrl"]?.stringValue
            flashVer = object["flashVer"]?.stringValue ?? object["flashver"]?.stringValue
            objectEncoding = object["objectEncoding"]?.numberValue ?? 0
            state = .connected(app: app.trimmingCharacters(in: "/"))
            return [.send([
                .windowAcknowledgementSize(Self.windowAcknowledgementSize),
                .setPeerBandwidth(Self.windowAcknowledgementSize),
                .setChunkSize(Self.outgoingChunkSize),
                .command([
                    .string("_result"), .number(transaction),
                    .object([("fmsVer", .string("FMS/3,5,7,7009")), ("capabilities", .number(31)), ("mode", .number(1))]),
                    .object([
                        ("level", .string("status")), ("code", .string("NetConnection.Connect.Success")),
                        ("description", .string("Connection succeeded.")), ("objectEncoding", .number(objectEncoding)),
                    ]),
                ]),
            ])]
        case "releaseStream", "FCPublish", "FCUnpublish", "getStreamLength":
            var out: [RTMPMessage] = []
            if transaction != 0 { out.append(.command([.string("_result"), .number(transaction), .null, .undefined])) }
            if name == "FCPublish", values.count > 3, let stream = values[3].stringValue {
                out.append(.command([.string("onFCPublish"), .number(0), .null, .object([
                    ("code", .string("NetStream.Publish.Start")), ("description", .string(PublishRequest.splitName(stream).key.isEmpty ? "" : "publish")),
                ])]))
            }
            if name == "FCUnpublish", case .publishing = state {
                state = .connected(app: currentApp)
                return [.send(out + [unpublishStatus()]), .unpublished]
            }
            return out.isEmpty ? [] : [.send(out)]
        case "createStream":
            return [.send([.command([.string("_result"), .number(transaction), .null, .number(Double(Self.publishStreamID))])])]
        case "publish":
            guard case .connected(let app) = state else { return close("publish before connect") }
            let rawName = values.count > 3 ? (values[3].stringValue ?? "") : ""
            let type = values.count > 4 ? (values[4].stringValue ?? "live") : "live"
            let (key, query) = PublishRequest.splitName(rawName)
            let request = PublishRequest(app: app, streamKey: key, query: query, publishType: type, tcUrl: tcUrl, flashVer: flashVer)
            publishTransaction = transaction
            state = .authorizing(request)
            return [.authorize(request)]
        case "deleteStream", "closeStream":
            if case .publishing = state {
                state = .connected(app: currentApp)
                return [.send([unpublishStatus()]), .unpublished]
            }
            return []
        case "_checkbw", "_result", "_error", "onBWDone":
            return []
        default:
            // Unknown calls get an _error so clients waiting on a transaction do not hang.
            if transaction != 0 {
                return [.send([.command([.string("_error"), .number(transaction), .null, .object([
                    ("level", .string("error")), ("code", .string("NetConnection.Call.Failed")),
                    ("description", .string("Method not found (\(name)).")),
                ])])])]
            }
            return []
        }
    }

    private func mediaAction(_ message: RTMPMessage) -> [Action] {
        if message.type == .amf0Data || message.type == .amf3Data {
            // An AMF3 data message is a format byte 0, then AMF0 values (which may switch to AMF3).
            let body = message.type == .amf3Data ? Array(message.payload.dropFirst()) : message.payload
            guard let values = try? AMF0.decodeAll(body) else { return [] }
            return [.metadata(values)]
        }
        return [.media(message)]
    }

    /// The stream key checked out: start publishing, then replay what arrived meanwhile.
    public mutating func publishAuthorized() -> [Action] {
        guard case .authorizing(let request) = state else { return [] }
        state = .publishing(request)
        let held = heldWhileAuthorizing
        heldWhileAuthorizing = []
        return [.send([
            .streamBegin(Self.publishStreamID),
            status(level: "status", code: "NetStream.Publish.Start", description: "\(request.streamKey.prefix(4))… is now published."),
        ])] + held.flatMap(mediaAction)
    }

    /// The stream key was refused: tell the client in the form it expects, then close.
    public mutating func publishRejected(_ rejection: Rejection) -> [Action] {
        guard case .authorizing = state else { return [] }
        state = .closed
        heldWhileAuthorizing = []
        let (code, text): (String, String)
        switch rejection {
        case .badName(let t): (code, text) = ("NetStream.Publish.BadName", t)
        case .quotaExceeded(let t): (code, text) = ("NetStream.Publish.Denied", t)
        case .unavailable(let t): (code, text) = ("NetStream.Publish.Failed", t)
        }
        return [.close(reason: text, messages: [
            status(level: "error", code: code, description: text),
            .command([.string("_error"), .number(publishTransaction), .null, .object([
                ("level", .string("error")), ("code", .string(code)), ("description", .string(text)),
            ])]),
        ])]
    }

    /// The published media cannot be taken (an unsupported codec): end the publish, tell the
    /// client why with `NetStream.Publish.Rejected`, and close.
    public mutating func publishFailed(_ reason: String) -> [Action] {
        guard case .publishing = state else { return [] }
        state = .closed
        return [.unpublished, .close(reason: reason, messages: [
            status(level: "error", code: "NetStream.Publish.Rejected", description: "Storecast cannot take this stream: \(reason)"),
        ])]
    }

    public mutating func connectionClosed() -> [Action] {
        defer { state = .closed }
        if case .publishing = state { return [.unpublished] }
        return []
    }

    private var currentApp: String {
        switch state {
        case .connected(let app): app
        case .authorizing(let r), .publishing(let r): r.app
        default: ""
        }
    }

    private func unpublishStatus() -> RTMPMessage {
        status(level: "status", code: "NetStream.Unpublish.Success", description: "Stream is now unpublished.")
    }

    private func status(level: String, code: String, description: String) -> RTMPMessage {
        .command([.string("onStatus"), .number(0), .null, .object([
            ("level", .string(level)), ("code", .string(code)), ("description", .string(description)),
        ])], streamID: Self.publishStreamID, chunkStreamID: RTMPChunkStream.status)
    }

    private mutating func close(_ reason: String) -> [Action] {
        state = .closed
        return [.close(reason: reason, messages: [])]
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
