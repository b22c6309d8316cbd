import ArgumentParser
import Foundation
import PostgresClient
import StorecastRuntime

@main
struct StorecastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storecast",
        abstract: "Operate Storecast: migrate the database, manage tenants and streams, run the local stack.",
        subcommands: [Migrate.self, Tenant.self, Stream.self, Keys.self, Dev.self, DevDatabase.self, BenchLadder.self, BenchCurve.self])
}

struct DatabaseOption: ParsableArguments {
    @Option(help: "PostgreSQL connection string (or STORECAST_DATABASE).") var database: String?

    var conninfo: String {
        get throws {
            guard let value = database ?? ProcessInfo.processInfo.environment["STORECAST_DATABASE"] else {
                throw ValidationError("give --database 'host=… dbname=…' or set STORECAST_DATABASE")
            }
            return value
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending SQL migrations from schemas/migrations.")
    @OptionGroup var db: DatabaseOption
    @Option(help: "Folder of numbered .sql files (default: schemas/migrations, found next to the binary or the current folder).") var migrations: String?

    func run() async throws {
        let executor = PostgresExecutor(conninfo: try db.conninfo)
        defer { executor.shutdown() }
        let applied = try await Storecast.migrate(executor, directory: migrations)
        print(applied.isEmpty ? "database is up to date" : "applied migrations \(applied.map(String.init).joined(separator: ", "))")
    }
}

struct Tenant: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage tenants.", subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a tenant (brand or shop).")
        @OptionGroup var db: DatabaseOption
        @Argument(help: "Tenant slug (a-z, 0-9, '-').") var slug: String
        @Option(help: "Display name.") var name: String?
        @Option(help: "Most streams live at once.") var maxStreams = 10

        func run() async throws {
            let executor = PostgresExecutor(conninfo: try db.conninfo)
            defer { executor.shutdown() }
            let id = try await StreamCatalog(database: executor).createTenant(slug: slug, name: name ?? slug, maxConcurrentStreams: maxStreams)
            print("tenant \(slug) (id \(id))")
        }
    }
}

struct Stream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage streams.", subcommands: [Create.self, List.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a stream and print its key (shown only once).")
        @OptionGroup var db: DatabaseOption
        @Argument(help: "Tenant slug.") var tenant: String
        @Argument(help: "Stream slug.") var slug: String
        @Option(help: "Title.") var title = ""
        @Option(help: "RTMP base URL for the printed publish URL.") var rtmpBaseURL = "rtmp://127.0.0.1:1935"

        func run() async throws {
            let executor = PostgresExecutor(conninfo: try db.conninfo)
            defer { executor.shutdown() }
            let created = try await StreamCatalog(database: executor).createStream(tenantSlug: tenant, slug: slug, title: title)
            print("stream \(tenant)/\(slug) (id \(created.streamID))")
            print("stream key (shown once): \(created.streamKey)")
            print("publish to: \(rtmpBaseURL)/live/\(created.streamKey)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List streams and their status.")
        @OptionGroup var db: DatabaseOption
        @Option(help: "Only this tenant.") var tenant: String?

        func run() async throws {
            let executor = PostgresExecutor(conninfo: try db.conninfo)
            defer { executor.shutdown() }
            for s in try await StreamCatalog(database: executor).listStreams(tenantSlug: tenant) {
                print("\(s.id)\t\(s.tenant)/\(s.slug)\t\(s.status)\tkey \(s.keyPrefix)…")
            }
        }
    }
}

enum Storecast {
    static func migrate(_ executor: PostgresExecutor, directory: String?) async throws -> [Int] {
        guard let url = directory.map({ URL(fileURLWithPath: $0) }) ?? Migrator.locateDirectory() else {
            throw ValidationError("schemas/migrations not found; run from the repository or pass --migrations")
        }
        return try await Migrator(directory: url).apply(on: executor)
    }
}

/// The throwaway PostgreSQL of `storecast dev` on its own, for benchmarks and manual work.
struct DevDatabase: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "dev-db", abstract: "Start or stop a throwaway PostgreSQL (never for production).", subcommands: [Start.self, Stop.self])

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start it and print its conninfo.")
        @Option(help: "Folder for the cluster.") var runDirectory = ".run"
        @Option(help: "Port on 127.0.0.1.") var port = 54329
        func run() throws {
            let pg = try LocalPostgres.start(runDirectory: URL(fileURLWithPath: runDirectory), port: port)
            print(pg.conninfo)
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop it.")
        @Option(help: "Folder for the cluster.") var runDirectory = ".run"
        @Option(help: "Port on 127.0.0.1.") var port = 54329
        func run() throws {
            try LocalPostgres.start(runDirectory: URL(fileURLWithPath: runDirectory), port: port).stop()
        }
    }
}
