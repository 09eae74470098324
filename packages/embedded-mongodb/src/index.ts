export { ENGINE_OPTIONS, ENGINE_OPTIONS_HELP, type EngineArguments, EngineArgumentsError, startEngine } from './command-line.js';
export { type Clock, DataDirectoryError, type EmbeddedServer, type EmbeddedServerOptions, startEmbeddedServer } from './server.js';
