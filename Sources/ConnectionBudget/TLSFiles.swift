import NIOSSL

/// A TLS listener's certificate chain and private key, as PEM files: an operator's, or the
/// self-signed pair `storecast dev` makes. Read and checked once at start-up, so a wrong path or a
/// key that does not match the certificate stops the service with what to fix, not the first
/// browser's handshake.
public struct TLSFiles: Sendable, Equatable {
    public var certificateChainPath: String
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A server configuration of TLS 1.2 and up with this chain and key (the HTTP/2 channel sets
    /// its ALPN protocols, h2 then http/1.1).
    public func serverConfiguration() throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateChainPath)
        } catch {
            throw Failure(description: "cannot read the TLS certificate chain \(certificateChainPath) (\(error)): give a PEM file, the server's certificate first")
        }
        guard !chain.isEmpty else { throw Failure(description: "\(certificateChainPath) holds no PEM certificate: give the server's certificate first, then its intermediates") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem)
        } catch {
            throw Failure(description: "cannot read the TLS private key \(privateKeyPath) (\(error)): give an unencrypted PEM key (RSA or EC)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw Failure(description: "the TLS key \(privateKeyPath) and certificate \(certificateChainPath) do not make a server context (\(error)): is the key the certificate's?")
        }
        return configuration
    }
}
