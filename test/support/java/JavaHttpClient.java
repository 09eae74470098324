import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Calls a server as the legacy Java SDK does, with java.net.http.HttpClient's defaults (HTTP/2
 * preferred: on http:// it asks every request to upgrade to h2c). Arguments: the base URL, the
 * Authorization header, then METHOD PATH BODY for each request ("" for no body). Prints one line
 * per answer: the status, a tab, the body.
 */
public class JavaHttpClient {
  public static void main(String[] args) throws Exception {
    HttpClient client = HttpClient.newHttpClient();
    for (int index = 2; index + 2 < args.length; index += 3) {
      String body = args[index + 2];
      HttpRequest.BodyPublisher publisher =
          body.isEmpty() ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
      HttpRequest request =
          HttpRequest.newBuilder(URI.create(args[0] + args[index + 1]))
              .header("Authorization", args[1])
              .header("Content-Type", "application/json")
              .method(args[index], publisher)
              .build();
      HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
      System.out.println(response.statusCode() + "\t" + response.body());
    }
  }
}
